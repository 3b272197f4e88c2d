// RFC 9113 section 8's checks (message_checks.hpp).
#include "proxy/session/exchange/h2/message_checks.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "rules/ascii.hpp"

namespace sandgate::session::exchange::h2 {
namespace {

// RFC 9113 section 6.5.2: each field counts 32 bytes beyond its name and value.
constexpr std::size_t kFieldOverhead = 32;

bool is_tchar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
    return true;
  }
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool is_pseudo(std::string_view name) { return !name.empty() && name.front() == ':'; }

// A field that may appear in no trailer section the gate passes on (check_trailers()).
bool forbidden_in_trailers(std::string_view name) {
  static constexpr std::array<std::string_view, 7> kNames{
      "content-length", "host", "te", "trailer", "authorization", "proxy-authorization", "cookie"};
  return std::find(kNames.begin(), kNames.end(), name) != kNames.end();
}

// A regular field as the wire may carry it, received or sent: name, value, and the fields
// HTTP/2 has no place for.
StreamProblem check_regular_field(const Field& field) {
  if (is_pseudo(field.name)) {
    return StreamProblem::forbidden_field;  // after a regular one, or in trailers
  }
  if (!is_field_name(field.name)) {
    return StreamProblem::invalid_field_name;
  }
  if (!is_field_value(field.value)) {
    return StreamProblem::invalid_field_value;
  }
  if (is_connection_specific(field.name)) {
    return StreamProblem::forbidden_field;
  }
  if (field.name == "te" && !rules::ascii_iequals(field.value, "trailers")) {
    return StreamProblem::forbidden_field;
  }
  return StreamProblem::none;
}

// The regular fields of a head (after its pseudo-header fields): each valid, and content-length
// at most once and well formed.
StreamProblem check_regular_fields(const FieldList& fields, std::size_t first,
                                   std::optional<std::uint64_t>& content_length) {
  for (std::size_t i = first; i < fields.size(); ++i) {
    if (const StreamProblem problem = check_regular_field(fields[i]);
        problem != StreamProblem::none) {
      return problem;
    }
    if (fields[i].name == "content-length") {
      const auto length = parse_content_length(fields[i].value);
      if (content_length || !length) {
        return StreamProblem::forbidden_field;
      }
      content_length = length;
    }
  }
  return StreamProblem::none;
}

// The pseudo-header fields at the front of a request block, each at most once.
struct RequestPseudo {
  const std::string* method = nullptr;
  const std::string* scheme = nullptr;
  const std::string* authority = nullptr;
  const std::string* path = nullptr;
  const std::string* protocol = nullptr;
};

StreamProblem read_request_pseudo(const FieldList& block, RequestPseudo& pseudo,
                                  std::size_t& regular) {
  regular = 0;
  for (; regular < block.size() && is_pseudo(block[regular].name); ++regular) {
    const Field& field = block[regular];
    const std::string** slot = field.name == ":method"      ? &pseudo.method
                               : field.name == ":scheme"    ? &pseudo.scheme
                               : field.name == ":authority" ? &pseudo.authority
                               : field.name == ":path"      ? &pseudo.path
                               : field.name == ":protocol"  ? &pseudo.protocol
                                                            : nullptr;
    if (slot == nullptr || *slot != nullptr) {
      return StreamProblem::forbidden_field;  // unknown (:status in a request) or repeated
    }
    if (field.value.empty()) {
      return StreamProblem::invalid_pseudo_header;
    }
    *slot = &field.value;
  }
  return StreamProblem::none;
}

// The authority of a request: :authority, or host in its place; both must agree.
StreamProblem read_authority(const RequestPseudo& pseudo, const FieldList& block,
                             std::size_t regular, std::string& authority) {
  const std::string* host = nullptr;
  for (std::size_t i = regular; i < block.size(); ++i) {
    if (block[i].name == "host") {
      if (host != nullptr) {
        return StreamProblem::forbidden_field;
      }
      host = &block[i].value;
    }
  }
  if (pseudo.authority == nullptr && host == nullptr) {
    return StreamProblem::missing_pseudo_header;
  }
  if (pseudo.authority != nullptr && host != nullptr &&
      !rules::ascii_iequals(*pseudo.authority, *host)) {
    return StreamProblem::host_mismatch;
  }
  authority = pseudo.authority != nullptr ? *pseudo.authority : *host;
  return is_authority(authority) ? StreamProblem::none : StreamProblem::authority_invalid;
}

StreamProblem check_request_target(const RequestPseudo& pseudo, const RequestRules& rules) {
  if (pseudo.method == nullptr) {
    return StreamProblem::missing_pseudo_header;
  }
  if (!is_token(*pseudo.method)) {
    return StreamProblem::invalid_pseudo_header;
  }
  const bool connect = *pseudo.method == "CONNECT";
  if (pseudo.protocol != nullptr) {
    if (!rules.connect_protocol) {
      return StreamProblem::protocol_not_enabled;
    }
    if (!connect || !is_token(*pseudo.protocol)) {
      return StreamProblem::invalid_pseudo_header;
    }
  } else if (connect) {
    return StreamProblem::plain_connect;
  }
  if (pseudo.scheme == nullptr || pseudo.path == nullptr) {
    return StreamProblem::missing_pseudo_header;
  }
  if (*pseudo.scheme != rules.scheme) {
    return StreamProblem::scheme_mismatch;
  }
  if (!is_request_path(*pseudo.path, *pseudo.method)) {
    return StreamProblem::path_invalid;
  }
  return StreamProblem::none;
}

std::optional<unsigned> parse_status(std::string_view value) {
  if (value.size() != 3 ||
      !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  const unsigned status = (value[0] - '0') * 100U + (value[1] - '0') * 10U + (value[2] - '0');
  if (status < 100 || status > 599 || status == 101) {
    return std::nullopt;
  }
  return status;
}

}  // namespace

void HeaderBlock::add(std::string_view name, std::string_view value, bool never_index) {
  if (too_large_) {
    return;
  }
  size_ += name.size() + value.size() + kFieldOverhead;
  if (size_ > limit_) {
    too_large_ = true;
    FieldList().swap(fields_);
    return;
  }
  fields_.push_back(Field{std::string(name), std::string(value), never_index});
}

bool is_token(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return is_tchar(static_cast<unsigned char>(c));
  });
}

bool is_field_name(std::string_view name) {
  return is_token(name) &&
         std::none_of(name.begin(), name.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

bool is_field_value(std::string_view value) {
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  if (!value.empty() && (blank(value.front()) || blank(value.back()))) {
    return false;
  }
  return std::all_of(value.begin(), value.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c == '\t' || (c >= 0x20 && c != 0x7f);
  });
}

bool is_connection_specific(std::string_view name) {
  return name == "connection" || name == "keep-alive" || name == "proxy-connection" ||
         name == "transfer-encoding" || name == "upgrade";
}

bool is_authority(std::string_view authority) {
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos || close < 3) {
      return false;
    }
    const std::string_view address = authority.substr(1, close - 1);
    if (!std::all_of(address.begin(), address.end(), [](char c) {
          return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == ':' || c == '.';
        })) {
      return false;
    }
    host = authority.substr(0, close + 1);
    const std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return false;
      }
      port = rest.substr(1);
      if (port.empty()) {
        return false;
      }
    }
  } else {
    const std::size_t colon = authority.find(':');
    if (colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
      if (port.empty()) {
        return false;
      }
    }
    if (host.empty() || !std::all_of(host.begin(), host.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' ||
                 c == '_' || c == '~';
        })) {
      return false;
    }
  }
  if (port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  return port.empty() || std::stoul(std::string(port)) <= 65535;
}

bool is_request_path(std::string_view path, std::string_view method) {
  if (path == "*") {
    return method == "OPTIONS";
  }
  if (path.empty() || path.front() != '/') {
    return false;
  }
  return std::all_of(path.begin(), path.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c > 0x20 && c < 0x7f && c != '#';
  });
}

std::optional<std::uint64_t> parse_content_length(std::string_view value) {
  if (value.empty() || value.size() > 18 ||
      !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;  // 18 digits stay below 2^63 - 1: no overflow to check
  }
  std::uint64_t length = 0;
  for (const char c : value) {
    length = length * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return length;
}

Expected<RequestHead, StreamProblem> read_request_head(FieldList block, const RequestRules& rules) {
  RequestPseudo pseudo;
  std::size_t regular = 0;
  RequestHead head;
  StreamProblem problem = read_request_pseudo(block, pseudo, regular);
  if (problem == StreamProblem::none) {
    problem = check_request_target(pseudo, rules);
  }
  if (problem == StreamProblem::none) {
    problem = read_authority(pseudo, block, regular, head.authority);
  }
  if (problem == StreamProblem::none) {
    problem = check_regular_fields(block, regular, head.content_length);
  }
  if (problem != StreamProblem::none) {
    return Unexpected{problem};
  }
  head.method = *pseudo.method;
  head.scheme = *pseudo.scheme;
  head.path = *pseudo.path;
  head.protocol = pseudo.protocol != nullptr ? *pseudo.protocol : std::string();
  for (std::size_t i = regular; i < block.size(); ++i) {
    if (block[i].name != "host") {
      head.fields.push_back(std::move(block[i]));
    }
  }
  return head;
}

Expected<ResponseHead, StreamProblem> read_response_head(FieldList block) {
  std::size_t regular = 0;
  const std::string* status = nullptr;
  for (; regular < block.size() && is_pseudo(block[regular].name); ++regular) {
    if (block[regular].name != ":status" || status != nullptr) {
      return Unexpected{StreamProblem::forbidden_field};
    }
    status = &block[regular].value;
  }
  if (status == nullptr) {
    return Unexpected{StreamProblem::missing_pseudo_header};
  }
  ResponseHead head;
  const auto code = parse_status(*status);
  if (!code) {
    return Unexpected{StreamProblem::invalid_pseudo_header};
  }
  head.status = *code;
  if (const StreamProblem problem = check_regular_fields(block, regular, head.content_length);
      problem != StreamProblem::none) {
    return Unexpected{problem};
  }
  head.fields.assign(std::make_move_iterator(block.begin() + static_cast<std::ptrdiff_t>(regular)),
                     std::make_move_iterator(block.end()));
  return head;
}

StreamProblem check_trailers(const FieldList& fields) {
  for (const Field& field : fields) {
    if (const StreamProblem problem = check_regular_field(field); problem != StreamProblem::none) {
      return problem == StreamProblem::forbidden_field ? StreamProblem::trailers_invalid : problem;
    }
    if (forbidden_in_trailers(field.name)) {
      return StreamProblem::trailers_invalid;
    }
  }
  return StreamProblem::none;
}

SubmitError check_outgoing_request(const RequestHead& head) {
  RequestRules rules{.scheme = head.scheme, .connect_protocol = head.extended_connect()};
  if (head.scheme != "https" && head.scheme != "http") {
    return SubmitError::invalid_head;
  }
  FieldList block{{":method", head.method},
                  {":scheme", head.scheme},
                  {":authority", head.authority},
                  {":path", head.path}};
  if (head.extended_connect()) {
    block.push_back({":protocol", head.protocol});
  }
  block.insert(block.end(), head.fields.begin(), head.fields.end());
  return read_request_head(std::move(block), rules) ? SubmitError::none : SubmitError::invalid_head;
}

SubmitError check_outgoing_response(const ResponseHead& head, bool interim) {
  if (interim ? (head.status < 100 || head.status > 199 || head.status == 101)
              : (head.status < 200 || head.status > 599)) {
    return SubmitError::invalid_head;
  }
  std::optional<std::uint64_t> content_length;
  return check_regular_fields(head.fields, 0, content_length) == StreamProblem::none
             ? SubmitError::none
             : SubmitError::invalid_head;
}

SubmitError check_outgoing_trailers(const FieldList& fields) {
  return check_trailers(fields) == StreamProblem::none ? SubmitError::none
                                                       : SubmitError::invalid_head;
}

const std::string* find_field(const FieldList& fields, std::string_view name) {
  for (const Field& field : fields) {
    if (field.name == name) {
      return &field.value;
    }
  }
  return nullptr;
}

}  // namespace sandgate::session::exchange::h2
