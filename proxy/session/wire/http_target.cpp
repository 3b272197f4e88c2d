// Absolute-form request targets. See http_target.hpp.
#include "proxy/session/wire/http_target.hpp"

#include "rules/ascii.hpp"

namespace sandgate::session {
namespace {

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) {
    return false;
  }
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (rules::ascii_lower(text[i]) != prefix[i]) {
      return false;
    }
  }
  return true;
}

Unexpected<TargetFailure> fail(TargetError error,
                               rules::HostError host_error = rules::HostError::empty) {
  return Unexpected<TargetFailure>{TargetFailure{error, host_error}};
}

}  // namespace

Expected<HttpTarget, TargetFailure> parse_http_target(std::string_view target, bool is_options) {
  // Beast already refuses control characters and spaces in the request line; check again so
  // this function is safe on its own.
  for (const char c : target) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte == 0x7f) {
      return fail(TargetError::bad_character);
    }
  }
  if (target.starts_with('/')) {
    return fail(TargetError::origin_form);
  }
  if (starts_with_nocase(target, "https://")) {
    return fail(TargetError::https);
  }
  if (!starts_with_nocase(target, "http://")) {
    return fail(TargetError::unsupported_scheme);
  }
  if (target.find('#') != std::string_view::npos) {
    return fail(TargetError::fragment);
  }
  std::string_view rest = target.substr(7);

  // The authority runs to the first '/' or '?'. '@' anywhere in it is user information: refused
  // outright, since parsers disagree on which '@' ends it.
  const std::size_t end = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, end);
  const std::string_view path =
      end == std::string_view::npos ? std::string_view{} : rest.substr(end);
  if (authority.find('@') != std::string_view::npos) {
    return fail(TargetError::host, rules::HostError::userinfo);
  }

  // A port is present when a ':' follows the host (after the brackets of an IPv6 literal).
  const std::size_t close = authority.starts_with('[') ? authority.find(']') : 0;
  const bool has_port =
      close != std::string_view::npos && authority.find(':', close) != std::string_view::npos;
  HttpTarget result;
  if (has_port) {
    auto parsed = rules::parse_authority(authority);
    if (!parsed) {
      return fail(TargetError::host, parsed.error());
    }
    result.host = std::move(parsed->host);
    result.port = parsed->port;
  } else {
    auto parsed = rules::parse_host(authority);
    if (!parsed) {
      return fail(TargetError::host, parsed.error());
    }
    result.host = std::move(*parsed);
  }

  // What the origin sees: the normalised host, and the port only when it is not the default.
  result.authority = result.host.display();
  if (result.port != 80) {
    result.authority += ':';
    result.authority += std::to_string(result.port);
  }

  if (path.empty()) {
    result.origin_form = is_options ? "*" : "/";
  } else if (path.front() == '?') {
    result.origin_form = "/";
    result.origin_form += path;
  } else {
    result.origin_form = path;
  }
  return result;
}

rules::Reason target_error_reason(const TargetFailure& failure) {
  switch (failure.error) {
    case TargetError::origin_form:
      return rules::Reason::origin_form;
    case TargetError::https:
      return rules::Reason::https_absolute_form;
    case TargetError::unsupported_scheme:
      return rules::Reason::unsupported_scheme;
    case TargetError::bad_character:
    case TargetError::fragment:
      return rules::Reason::bad_request;
    case TargetError::host:
      return rules::Reason::invalid_host;
  }
  return rules::Reason::bad_request;
}

std::string_view target_error_code(const TargetFailure& failure) {
  return rules::reason_code(target_error_reason(failure));
}

std::string target_error_text(const TargetFailure& failure, std::string_view target) {
  switch (failure.error) {
    case TargetError::origin_form:
      return "this is a proxy: send CONNECT host:port, or an absolute URL (http://host/path), "
             "not a bare path.";
    case TargetError::https:
      return "https:// URLs must be tunnelled with CONNECT; the proxy will not send them as "
             "plain text.";
    case TargetError::unsupported_scheme:
      return "the request target must be an absolute http:// URL (or use CONNECT host:port).";
    case TargetError::bad_character:
      return "the request target holds a control character, space or DEL.";
    case TargetError::fragment:
      return "the request target holds a fragment ('#'), which is never sent to a server.";
    case TargetError::host:
      return "'" + std::string(target) +
             "' is not a valid http:// URL: " + std::string(rules::to_string(failure.host_error)) +
             ".";
  }
  return "the request target is invalid.";
}

}  // namespace sandgate::session
