// Heads between HTTP/2 and HTTP/1.1 (http1_mapping.hpp).
#include "proxy/session/exchange/h2/http1_mapping.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "proxy/session/exchange/h2/message_checks.hpp"
#include "rules/ascii.hpp"

namespace sandgate::session::exchange::h2 {
namespace {

// The comma-separated tokens of a field value, lowercased and trimmed (empty ones left out).
std::set<std::string> tokens(std::string_view value) {
  std::set<std::string> out;
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    const std::string_view item = rules::trim_ows(value.substr(0, comma));
    if (!item.empty()) {
      out.insert(rules::ascii_lower(item));
    }
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
  }
  return out;
}

// An HTTP/1.1 head's fields as HTTP/2 carries them: names lowercased and checked, values trimmed
// and checked, hop-by-hop fields (connection-specific, and those Connection names) left out,
// content-length once and agreed. te is the caller's (kept or not).
struct Http1Fields {
  FieldList fields;
  bool transfer_encoding = false;
  std::optional<std::uint64_t> content_length;
  bool te_trailers = false;
};

Expected<Http1Fields, MappingProblem> read_http1_fields(const FieldList& fields) {
  std::set<std::string> hop_by_hop;
  for (const Field& field : fields) {
    if (rules::ascii_lower(field.name) == "connection") {
      const auto named = tokens(field.value);
      hop_by_hop.insert(named.begin(), named.end());
    }
  }
  Http1Fields out;
  for (const Field& field : fields) {
    std::string name = rules::ascii_lower(field.name);
    const std::string_view value = rules::trim_ows(field.value);
    if (!is_field_name(name) || !is_field_value(value)) {
      return Unexpected{MappingProblem::invalid_field};
    }
    if (name == "transfer-encoding") {
      out.transfer_encoding = true;
    }
    if (name == "te") {
      out.te_trailers = out.te_trailers || tokens(value).count("trailers") > 0;
      continue;
    }
    if (is_connection_specific(name) || hop_by_hop.count(name) > 0) {
      continue;
    }
    if (name == "content-length") {
      const auto length = parse_content_length(value);
      if (!length || (out.content_length && *out.content_length != *length)) {
        return Unexpected{MappingProblem::conflicting_length};
      }
      if (out.content_length) {
        continue;  // the same value again: once is enough
      }
      out.content_length = length;
    }
    out.fields.push_back(Field{std::move(name), std::string(value), field.never_index});
  }
  if (out.transfer_encoding && out.content_length) {
    // Transfer-Encoding overrides Content-Length (RFC 9112 section 6.3): the length is not the
    // body's, so it does not go on.
    std::erase_if(out.fields, [](const Field& f) { return f.name == "content-length"; });
    out.content_length.reset();
  }
  return out;
}

// The reason phrase of `status` (HTTP/2 carries none; HTTP/1.1 clients ignore it): the usual
// one for the statuses in use, none for the others.
std::string_view reason_of(unsigned status) {
  switch (status) {
    case 100:
      return "Continue";
    case 102:
      return "Processing";
    case 103:
      return "Early Hints";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 303:
      return "See Other";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 413:
      return "Content Too Large";
    case 422:
      return "Unprocessable Content";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "";
  }
}

}  // namespace

std::string_view describe(MappingProblem problem) {
  switch (problem) {
    case MappingProblem::none:
      return "no problem";
    case MappingProblem::extended_connect:
      return "an extended CONNECT (RFC 8441) is the WebSocket stage's to translate";
    case MappingProblem::plain_connect:
      return "CONNECT has no form the gate sends across HTTP versions";
    case MappingProblem::target_not_origin_form:
      return "the request target is not in origin form, or has a byte HTTP/2 does not carry (a "
             "space, a control character, '#', or one over 0x7e)";
    case MappingProblem::missing_host:
      return "the request has no Host, or more than one";
    case MappingProblem::invalid_field:
      return "a header field that cannot be carried (a name that is no token, or a control "
             "character in a value)";
    case MappingProblem::conflicting_length:
      return "content-length fields that disagree, or one that is not a number";
    case MappingProblem::status_not_mappable:
      return "a status HTTP/2 cannot carry (101, or outside 100-599)";
  }
  return "an unknown mapping problem";
}

Expected<Http1Request, MappingProblem> to_http1_request(const RequestHead& head, bool has_body) {
  if (head.extended_connect()) {
    return Unexpected{MappingProblem::extended_connect};
  }
  if (head.method == "CONNECT") {
    return Unexpected{MappingProblem::plain_connect};
  }
  Http1Request request{head.method, head.path, {{"host", head.authority}}, false};
  std::optional<std::size_t> cookie;
  for (const Field& field : head.fields) {
    if (field.name == "te" || field.name == "host") {
      continue;
    }
    if (field.name == "cookie") {
      if (cookie) {
        request.fields[*cookie].value += "; " + field.value;
        continue;
      }
      cookie = request.fields.size();
    }
    request.fields.push_back(field);
  }
  if (has_body && !head.content_length) {
    request.fields.push_back(Field{"transfer-encoding", "chunked"});
    request.chunked = true;
  }
  return request;
}

Expected<ResponseHead, MappingProblem> to_http2_response(unsigned status, const FieldList& fields) {
  if (status < 100 || status > 599 || status == 101) {
    return Unexpected{MappingProblem::status_not_mappable};
  }
  auto read = read_http1_fields(fields);
  if (!read) {
    return Unexpected{read.error()};
  }
  ResponseHead head{status, std::move(read->fields), read->content_length};
  if (status < 200 || status == 204) {
    std::erase_if(head.fields, [](const Field& f) { return f.name == "content-length"; });
    head.content_length.reset();
  }
  return head;
}

Http1ResponseHead to_http1_response(const ResponseHead& head, bool interim, bool bodiless,
                                    bool end_stream) {
  Http1ResponseHead out;
  out.text = "HTTP/1.1 " + std::to_string(head.status) + " " + std::string(reason_of(head.status)) +
             "\r\n";
  for (const Field& field : head.fields) {
    if (field.name == "transfer-encoding") {
      continue;  // (HTTP/2 has none; the framing is the gate's)
    }
    out.text += field.name + ": " + field.value + "\r\n";
  }
  const bool may_have_body = !interim && !bodiless && head.status != 204 && head.status != 304;
  if (may_have_body && !head.content_length) {
    out.chunked = !end_stream;
    out.text += end_stream ? "content-length: 0\r\n" : "transfer-encoding: chunked\r\n";
  }
  out.text += "\r\n";
  return out;
}

Expected<RequestHead, MappingProblem> to_http2_request(std::string_view method,
                                                       std::string_view target,
                                                       const FieldList& fields,
                                                       std::string_view scheme) {
  if (method == "CONNECT") {
    return Unexpected{MappingProblem::plain_connect};
  }
  if (!is_request_path(target, method)) {
    return Unexpected{MappingProblem::target_not_origin_form};
  }
  auto read = read_http1_fields(fields);
  if (!read) {
    return Unexpected{read.error()};
  }
  RequestHead head{std::string(method), std::string(scheme), {}, std::string(target), {}, {},
                   read->content_length};
  std::size_t hosts = 0;
  for (Field& field : read->fields) {
    if (field.name == "host") {
      ++hosts;
      head.authority = field.value;
    } else {
      head.fields.push_back(std::move(field));
    }
  }
  if (hosts != 1 || !is_authority(head.authority)) {
    return Unexpected{MappingProblem::missing_host};
  }
  if (read->te_trailers) {
    head.fields.push_back(Field{"te", "trailers"});
  }
  return head;
}

}  // namespace sandgate::session::exchange::h2
