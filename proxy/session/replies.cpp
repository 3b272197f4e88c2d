// The proxy's own replies. See replies.hpp.
#include "proxy/session/replies.hpp"

#include <array>

namespace sandgate::session {
namespace {

// Indexed by ReplyKind. The Proxy-Status error types are RFC 9209's registered names.
constexpr std::array<ReplyInfo, 15> kReplies = {{
    {403, "Forbidden", "http_request_denied"},
    {403, "Forbidden", "destination_ip_prohibited"},
    {400, "Bad Request", "http_request_error"},
    {431, "Request Header Fields Too Large", "http_request_error"},
    {408, "Request Timeout", "http_request_error"},
    {502, "Bad Gateway", "dns_error"},
    {502, "Bad Gateway", "dns_error"},
    {504, "Gateway Timeout", "dns_timeout"},
    {502, "Bad Gateway", "connection_refused"},
    {502, "Bad Gateway", "destination_unavailable"},
    {504, "Gateway Timeout", "connection_timeout"},
    {503, "Service Unavailable", "connection_limit_reached"},
    {502, "Bad Gateway", "http_response_incomplete"},
    {501, "Not Implemented", "http_request_error"},
    // RFC 9110 section 11.7.1: a 407 carries the challenge the client must answer.
    {407, "Proxy Authentication Required", "http_request_denied",
     "Proxy-Authenticate: Basic realm=\"sandgate\""},
}};
static_assert(kReplies.size() == static_cast<std::size_t>(ReplyKind::auth_required) + 1,
              "one kReplies entry per ReplyKind, in order");

}  // namespace

const ReplyInfo& reply_info(ReplyKind kind) { return kReplies[static_cast<std::size_t>(kind)]; }

std::string to_sf_string(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c >= 0x20 && c <= 0x7e) {
      out += c;
    } else {
      out += '?';
    }
  }
  out += '"';
  return out;
}

std::string build_reply(ReplyKind kind, std::string_view code, std::string_view sentence) {
  const ReplyInfo& info = reply_info(kind);
  std::string details(code);
  details += ": ";
  details += sentence;

  std::string body = "sandgate: ";
  body += info.status >= 500 ? "could not connect" : "refused";
  body += " (";
  body += code;
  body += "): ";
  body += sentence;
  body += '\n';

  std::string reply = "HTTP/1.1 " + std::to_string(info.status) + " ";
  reply += info.status_text;
  reply += "\r\nProxy-Status: sandgate; error=";
  reply += info.proxy_status_error;
  reply += "; details=";
  reply += to_sf_string(details);
  if (!info.extra_field.empty()) {
    reply += "\r\n";
    reply += info.extra_field;
  }
  reply += "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ";
  reply += std::to_string(body.size());
  reply += "\r\nConnection: close\r\n\r\n";
  reply += body;
  return reply;
}

}  // namespace sandgate::session
