// Fuzz target: an HTTP/2 origin's response head as an HTTP/1.1 client gets it
// (proxy/session/exchange/h2/http1_mapping.hpp, to_http1_response: what
// exchange/h1_over_h2_upstream.cpp writes for the HTTP/1.1 front's parser), read back by Beast's
// response parser, the one the front reads every origin's head with.
//
// The input: its first byte picks interim or final, a response to HEAD or not, and whether the
// head ended the stream; the next two the status (an interim one 100-199 but 101, a final one
// 200-599, as the client codec passes them on); the rest "name:value" lines, of which only those
// the client codec would pass on are kept (a token name in lowercase, a value without control
// characters, no connection-specific field, a content-length that is a number).
//
// Invariants, beyond "no out-of-bounds access and no undefined behaviour" (ASan, UBSan):
//   - the text is one whole HTTP/1.1 head that Beast reads without error, every byte of it;
//   - its status is the origin's, and its fields are the origin's (each name's values in order;
//     transfer-encoding aside), and at most one the gate adds;
//   - a final head that may have a body is framed: chunked exactly when the mapping says so, and
//     otherwise with the origin's content-length.
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/session/exchange/h2/http1_mapping.hpp"
#include "proxy/session/exchange/h2/message_checks.hpp"
#include "rules/ascii.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

namespace http = boost::beast::http;
using namespace sandgate::session::exchange::h2;

// The fields of `lines` the client codec would pass on.
FieldList fields_of(std::string_view lines, std::optional<std::uint64_t>& content_length) {
  FieldList fields;
  while (!lines.empty()) {
    const std::size_t end = lines.find('\n');
    const std::string_view line = lines.substr(0, end);
    lines = end == std::string_view::npos ? std::string_view() : lines.substr(end + 1);
    const std::size_t colon = line.find(':');
    if (colon == 0 || colon == std::string_view::npos) {
      continue;
    }
    Field field{std::string(line.substr(0, colon)), std::string(line.substr(colon + 1))};
    const bool lowercase =
        field.name.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") == std::string::npos;
    if (!lowercase || !is_field_name(field.name) || !is_field_value(field.value) ||
        sandgate::rules::trim_ows(field.value) != field.value ||
        is_connection_specific(field.name)) {
      continue;
    }
    if (field.name == "content-length") {
      const auto length = parse_content_length(field.value);
      if (!length || content_length) {
        continue;
      }
      content_length = length;
    }
    fields.push_back(std::move(field));
  }
  return fields;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) {
    return 0;
  }
  const bool interim = (data[0] & 1) != 0;
  const bool bodiless = (data[0] & 2) != 0;
  const bool end_stream = (data[0] & 4) != 0;
  const unsigned raw = static_cast<unsigned>(data[1]) << 8 | data[2];
  unsigned status = interim ? 100 + raw % 100 : 200 + raw % 400;
  if (status == 101) {
    status = 100;
  }
  ResponseHead head;
  head.status = status;
  head.fields = fields_of(std::string_view(reinterpret_cast<const char*>(data) + 3, size - 3),
                          head.content_length);
  const Http1ResponseHead mapped = to_http1_response(head, interim, bodiless, end_stream);

  http::response_parser<http::empty_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(mapped.text.size() + 1));
  parser.eager(false);
  boost::system::error_code error;
  const std::size_t used =
      parser.put(boost::asio::buffer(mapped.text.data(), mapped.text.size()), error);
  FUZZ_CHECK(
      !error || error == http::error::need_buffer,
      "Beast refused the head: " + error.message() + ": " + sandgate::fuzz::escaped(mapped.text));
  FUZZ_CHECK(used == mapped.text.size() && parser.is_header_done(),
             "not one whole head: " + sandgate::fuzz::escaped(mapped.text));
  const auto& message = parser.get();
  FUZZ_CHECK(message.result_int() == status, "status " + std::to_string(message.result_int()));
  // (Beast keeps the fields of one name together: each name's values are compared in order.)
  std::size_t kept = 0;
  for (const Field& field : head.fields) {
    if (field.name == "transfer-encoding") {
      continue;
    }
    ++kept;
    std::vector<std::string_view> sent;
    for (const Field& same : head.fields) {
      if (same.name == field.name) {
        sent.emplace_back(same.value);
      }
    }
    std::vector<std::string_view> read;
    const auto [first, last] = message.equal_range(field.name);
    for (auto it = first; it != last; ++it) {
      read.emplace_back(it->value().data(), it->value().size());
    }
    FUZZ_CHECK(read == sent,
               "the values of " + field.name + " in " + sandgate::fuzz::escaped(mapped.text));
  }
  const auto fields_read = static_cast<std::size_t>(std::distance(message.begin(), message.end()));
  FUZZ_CHECK(fields_read == kept || fields_read == kept + 1,
             "fields added or lost: " + sandgate::fuzz::escaped(mapped.text));
  const bool may_have_body = !interim && !bodiless && status != 204 && status != 304;
  if (may_have_body) {
    FUZZ_CHECK(parser.chunked() == mapped.chunked, "chunked disagrees");
    if (!mapped.chunked) {
      FUZZ_CHECK(parser.content_length() == head.content_length.value_or(0),
                 "content-length disagrees");
    }
  }
  return 0;
}
