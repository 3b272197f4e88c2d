// The proxy's own replies. See replies.hpp.
#include "proxy/session/wire/replies.hpp"

#include "proxy/json/json_writer.hpp"

namespace sandgate::session {
namespace {

// RFC 9110 section 11.7.1: a 407 carries the challenge the client must answer.
constexpr std::string_view kChallenge = "Proxy-Authenticate: Basic realm=\"sandgate\"";

}  // namespace

std::string_view status_text(unsigned status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 407:
      return "Proxy Authentication Required";
    case 408:
      return "Request Timeout";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Error";
  }
}

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

Reply reply_for(rules::Reason reason, std::string_view sentence, DeniedAt at) {
  const rules::ReasonInfo& row = rules::reason_info(reason);
  // A reason without a reply of its own reaching here is a bug in the caller; answer rather
  // than send a status line with 0 in it.
  Reply reply;
  reply.status = row.status != 0 ? row.status : 500;
  std::string_view error = row.status != 0 ? row.proxy_status_error : "proxy_internal_error";
  if (at == DeniedAt::resolved_address) {
    error = "destination_ip_prohibited";
  }

  std::string details(row.code);
  details += ": ";
  details += sentence;
  reply.proxy_status = "sandgate; error=";
  reply.proxy_status += error;
  reply.proxy_status += "; details=";
  reply.proxy_status += to_sf_string(details);

  reply.body = "sandgate: ";
  reply.body += reply.status >= 500 ? "could not connect" : "refused";
  reply.body += " (";
  reply.body += row.code;
  reply.body += "): ";
  // The sentence may quote what the client sent (a host name): the body is labelled UTF-8 text,
  // so make it that, with no control character a terminal would act on.
  json_writer::append_text(reply.body, sentence);
  reply.body += '\n';
  return reply;
}

std::string build_reply(rules::Reason reason, std::string_view sentence, DeniedAt at) {
  const Reply parts = reply_for(reason, sentence, at);
  std::string reply = "HTTP/1.1 " + std::to_string(parts.status) + " ";
  reply += status_text(parts.status);
  reply += "\r\nProxy-Status: ";
  reply += parts.proxy_status;
  if (parts.status == 407) {
    reply += "\r\n";
    reply += kChallenge;
  }
  reply += "\r\nContent-Type: ";
  reply += kReplyContentType;
  reply += "\r\nContent-Length: ";
  reply += std::to_string(parts.body.size());
  reply += "\r\nConnection: close\r\n\r\n";
  reply += parts.body;
  return reply;
}

}  // namespace sandgate::session
