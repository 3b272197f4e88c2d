// The CONNECT request and the proxy's answer. See connect_request.hpp.
#include "connect-proxy/connect_request.hpp"

#include <arpa/inet.h>

#include <cctype>
#include <charconv>
#include <cstdint>

#include "rules/ascii.hpp"

namespace sandgate::connect_proxy {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (rules::ascii_lower(a[i]) != rules::ascii_lower(b[i])) {
      return false;
    }
  }
  return true;
}

// `text` without SP and HTAB at either end, and without the CR a line split at its LF keeps at
// its end (a proxy that ends its lines in CRLF).
std::string_view trim_ows_and_cr(std::string_view text) {
  text = rules::trim_ows(text);
  while (!text.empty() && (rules::is_ows(text.back()) || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

// The next line of `rest` without its CRLF or LF; advances `rest` past it.
std::string_view next_line(std::string_view& rest) {
  const auto newline = rest.find('\n');
  std::string_view line = rest.substr(0, newline);
  rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);
  if (line.ends_with('\r')) {
    line.remove_suffix(1);
  }
  return line;
}

}  // namespace

std::string printable(std::string_view text, std::size_t limit) {
  std::string out;
  for (char c : text.substr(0, limit)) {
    const auto byte = static_cast<unsigned char>(c);
    out += (byte < 0x20 || byte == 0x7f) ? '?' : c;
  }
  if (text.size() > limit) {
    out += "...";
  }
  return out;
}

Expected<std::string, std::string> make_authority(std::string_view host, std::string_view port) {
  unsigned port_value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), port_value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || port_value == 0 ||
      port_value > 65535) {
    return Unexpected("the port '" + printable(port, 20) + "' is not a number from 1 to 65535");
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty() || host.size() > 255) {
    return Unexpected(std::string("the host name is empty or too long"));
  }
  for (char c : host) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte == 0x7f ||
        std::string_view("/?#@\\\"[]").find(c) != std::string_view::npos) {
      return Unexpected("the host '" + printable(host, 80) + "' is not a host name");
    }
  }
  const std::string port_text = std::to_string(port_value);
  if (host.find(':') != std::string_view::npos) {
    const std::string address(host);
    in6_addr parsed{};
    if (::inet_pton(AF_INET6, address.c_str(), &parsed) != 1) {
      return Unexpected("the host '" + printable(host, 80) + "' is not a host name");
    }
    return "[" + address + "]:" + port_text;
  }
  return std::string(host) + ":" + port_text;
}

std::string encode_base64(std::string_view bytes) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t group = (static_cast<unsigned char>(bytes[i]) << 16) |
                                (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                                static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(group >> 18) & 63];
    out += kAlphabet[(group >> 12) & 63];
    out += kAlphabet[(group >> 6) & 63];
    out += kAlphabet[group & 63];
  }
  if (const std::size_t left = bytes.size() - i; left > 0) {
    std::uint32_t group = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (left == 2) {
      group |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    }
    out += kAlphabet[(group >> 18) & 63];
    out += kAlphabet[(group >> 12) & 63];
    out += left == 2 ? kAlphabet[(group >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string build_connect_request(std::string_view authority, std::string_view credentials) {
  std::string request = "CONNECT ";
  request += authority;
  request += " HTTP/1.1\r\nHost: ";
  request += authority;
  if (!credentials.empty()) {
    request += "\r\nProxy-Authorization: Basic ";
    request += encode_base64(credentials);
  }
  request += "\r\n\r\n";
  return request;
}

std::optional<std::size_t> find_head_end(std::string_view bytes) {
  // The head ends at the first empty line: "\n\n" or "\n\r\n".
  for (std::size_t i = bytes.find('\n'); i != std::string_view::npos; i = bytes.find('\n', i + 1)) {
    if (i + 1 < bytes.size() && bytes[i + 1] == '\n') {
      return i + 2;
    }
    if (i + 2 < bytes.size() && bytes[i + 1] == '\r' && bytes[i + 2] == '\n') {
      return i + 3;
    }
  }
  return std::nullopt;
}

Expected<ResponseHead, std::string> parse_response_head(std::string_view head) {
  std::string_view rest = head;
  const std::string_view status_line = next_line(rest);
  auto not_http = [&] {
    return Unexpected("it answered something that is not an HTTP response: \"" +
                      printable(status_line, 60) + "\"");
  };

  // HTTP/1.x SP 3DIGIT [SP reason]
  if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12 || status_line[8] != ' ') {
    return not_http();
  }
  ResponseHead parsed;
  const std::string_view code = status_line.substr(9, 3);
  auto [end, ec] = std::from_chars(code.data(), code.data() + code.size(), parsed.status);
  if (ec != std::errc() || end != code.data() + code.size() || parsed.status < 100 ||
      parsed.status > 599 || (status_line.size() > 12 && status_line[12] != ' ')) {
    return not_http();
  }
  if (status_line.size() > 13) {
    parsed.reason = printable(trim_ows_and_cr(status_line.substr(13)), 80);
  }

  // Header fields: only Proxy-Status matters here.
  while (!rest.empty()) {
    const std::string_view line = next_line(rest);
    if (line.empty()) {
      break;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) {
      continue;  // not a field; a proxy's sloppiness is no reason to hide its status
    }
    if (iequals(trim_ows_and_cr(line.substr(0, colon)), "Proxy-Status") && parsed.details.empty()) {
      if (auto details = proxy_status_details(line.substr(colon + 1))) {
        parsed.details = printable(*details);
      }
    }
  }
  return parsed;
}

std::optional<std::string> proxy_status_details(std::string_view field_value) {
  // Find a `details=` parameter (after ';', so a proxy named "details" cannot fool it).
  for (std::size_t at = field_value.find(';'); at != std::string_view::npos;
       at = field_value.find(';', at + 1)) {
    std::string_view param = field_value.substr(at + 1);
    while (!param.empty() && (param.front() == ' ' || param.front() == '\t')) {
      param.remove_prefix(1);
    }
    if (!param.starts_with("details=")) {
      continue;
    }
    param.remove_prefix(8);
    std::string value;
    if (param.starts_with('"')) {
      // An sf-string: `\"` and `\\` are the only escapes.
      for (std::size_t i = 1; i < param.size(); ++i) {
        if (param[i] == '\\' && i + 1 < param.size()) {
          value += param[++i];
        } else if (param[i] == '"') {
          return value;
        } else {
          value += param[i];
        }
      }
      return value;  // unterminated: keep what arrived
    }
    const auto end = param.find_first_of(";, \t");
    return std::string(param.substr(0, end));
  }
  return std::nullopt;
}

std::string describe_refusal(const ResponseHead& head, std::string_view proxy,
                             std::string_view authority, bool sent_credentials) {
  std::string status = std::to_string(head.status);
  if (!head.reason.empty()) {
    status += " " + head.reason;
  }

  // sandgate's details are "CODE: sentence"; show the code in parentheses, then the sentence.
  std::string code;
  std::string sentence = head.details;
  if (const auto colon = head.details.find(": "); colon != std::string::npos) {
    const std::string_view candidate = std::string_view(head.details).substr(0, colon);
    bool is_code = !candidate.empty();
    for (char c : candidate) {
      is_code = is_code && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_');
    }
    if (is_code) {
      code = std::string(candidate);
      sentence = head.details.substr(colon + 2);
    }
  }

  // sandgate's own 407 (its reason codes say so) gets a message about its token; any other
  // proxy's 407 the generic one.
  const bool sandgate_auth =
      head.status == 407 && (code == "auth-required" || code == "auth-failed");
  std::string message = "the proxy at " + std::string(proxy);
  if (head.status == 403) {
    message += " refused " + std::string(authority) + " with " + status;
  } else if (sandgate_auth && sent_credentials) {
    message +=
        " did not accept the token sent for CONNECT " + std::string(authority) + ": " + status;
  } else if (sandgate_auth) {
    message += " requires a token for CONNECT " + std::string(authority) + ": " + status;
  } else if (head.status >= 500) {
    message += " could not connect to " + std::string(authority) + ": " + status;
  } else {
    message += " answered CONNECT " + std::string(authority) + " with " + status;
  }
  if (!code.empty()) {
    message += " (" + code + ")";
  }
  if (!sentence.empty()) {
    message += ": " + sentence;
  }
  if (sandgate_auth && !sent_credentials) {
    if (!message.ends_with('.')) {
      message += '.';
    }
    message +=
        " sandgate-connect sends one from SANDGATE_TOKEN, from the file SANDGATE_TOKEN_FILE "
        "names, or from a proxy address of the form http://USER:TOKEN@HOST:PORT.";
  }
  return message;
}

}  // namespace sandgate::connect_proxy
