// Fuzz target: every JSON writer of the gate on arbitrary bytes. The one escaping function
// (proxy/json/json_writer.hpp) directly, and each document built with it: the decision log's JSON
// lines (decision and end records, notes), /denials (metrics::render_denials_json) and the
// LaunchDarkly context body (launchdarkly::context_json). The output is read back with
// Boost.JSON's strict parser, which refuses text that is not UTF-8.
//
// Input: the field values, separated by "\n--\n" (a field can hold any byte, only not that
// sequence); field i is piece i modulo the number of pieces, so one piece fills every field. The
// first eight bytes, read as a double, are the end record's duration (NaN and infinities
// included).
//
// Invariants, beyond "no out-of-bounds access, no undefined behaviour" (ASan, UBSan):
//   - every document parses, strictly, and has the shape the gate documents (the fields, their
//     numbers, the denials in order);
//   - every string field reads back as an independent reference decoder says: well-formed UTF-8
//     unchanged, each ill-formed stretch (maximal subpart, Unicode 15 section 3.9) as one U+FFFD;
//     the reference decodes bit patterns and checks code-point ranges, where the writer reads
//     Unicode Table 3-7, so the two are written differently on purpose;
//   - is_valid_utf8 agrees with Boost.JSON's own validation of the raw bytes;
//   - the text is one line of printable JSON: no raw control byte, DEL, C1 control, U+2028 or
//     U+2029; a duration JSON cannot hold is null;
//   - the text log format stays one line too (no CR, LF or NUL).
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/json/json_writer.hpp"
#include "proxy/launchdarkly/flag_payload.hpp"
#include "proxy/log/decision_log.hpp"
#include "proxy/metrics/metrics.hpp"
#include "proxy/metrics/prometheus.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

namespace json = boost::json;
namespace json_writer = sandgate::json_writer;
namespace decision_log = sandgate::log;
namespace metrics = sandgate::metrics;
using sandgate::fuzz::escaped;

constexpr std::string_view kSeparator = "\n--\n";
constexpr std::string_view kReplacement = "\xef\xbf\xbd";

// ---------------------------------------------------------------------------------------------
// The reference: UTF-8 by its bit patterns (RFC 3629 section 3) and the definition of a Unicode
// scalar value, not by Table 3-7.

// The length a lead byte announces (2..4), or 0 when the byte cannot lead a multi-byte sequence.
std::size_t announced_length(unsigned char lead) {
  if ((lead & 0xe0) == 0xc0) {
    return 2;
  }
  if ((lead & 0xf0) == 0xe0) {
    return 3;
  }
  if ((lead & 0xf8) == 0xf0) {
    return 4;
  }
  return 0;
}

// Whether `bytes` (2..4 of them, as many as the lead announces) encode a scalar value in its
// shortest form.
bool well_formed(const unsigned char* bytes, std::size_t length) {
  static constexpr std::uint32_t kLeadMask[] = {0, 0, 0x1f, 0x0f, 0x07};
  static constexpr std::uint32_t kShortest[] = {0, 0, 0x80, 0x800, 0x10000};
  std::uint32_t code = bytes[0] & kLeadMask[length];
  for (std::size_t i = 1; i < length; ++i) {
    if ((bytes[i] & 0xc0) != 0x80) {
      return false;
    }
    code = (code << 6) | (bytes[i] & 0x3f);
  }
  return code >= kShortest[length] && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
}

// Whether the `k` bytes at `p` begin some well-formed sequence: complete them with every
// continuation byte in the second position (the only one a lead byte constrains) and 0x80 after.
bool begins_well_formed(const unsigned char* p, std::size_t k) {
  const std::size_t length = announced_length(p[0]);
  if (length == 0 || k >= length) {
    return false;
  }
  unsigned char trial[4] = {p[0], 0x80, 0x80, 0x80};
  for (std::size_t i = 1; i < k; ++i) {
    trial[i] = p[i];
  }
  if (k >= 2) {
    return well_formed(trial, length);
  }
  for (unsigned c = 0x80; c <= 0xbf; ++c) {
    trial[1] = static_cast<unsigned char>(c);
    if (well_formed(trial, length)) {
      return true;
    }
  }
  return false;
}

// What a string field must read back as.
std::string reference_decode(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t size = text.size();
  std::string out;
  std::size_t i = 0;
  while (i < size) {
    if (p[i] < 0x80) {
      out += static_cast<char>(p[i]);
      ++i;
      continue;
    }
    const std::size_t length = announced_length(p[i]);
    if (length != 0 && i + length <= size && well_formed(p + i, length)) {
      out.append(text.data() + i, length);
      i += length;
      continue;
    }
    // The maximal subpart: the longest prefix (at least one byte) that begins a well-formed
    // sequence.
    std::size_t subpart = 1;
    for (std::size_t k = 2; k <= 3 && i + k <= size; ++k) {
      if (begins_well_formed(p + i, k)) {
        subpart = k;
      }
    }
    out += kReplacement;
    i += subpart;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reading the output back.

std::optional<json::value> parse_strict(std::string_view text) {
  boost::system::error_code error;
  json::value value = json::parse(json::string_view(text.data(), text.size()), error);
  if (error) {
    return std::nullopt;
  }
  return value;
}

// Boost.JSON's verdict on the raw bytes as UTF-8: they are put in a literal with only what JSON
// requires escaped.
bool boost_json_accepts_as_utf8(std::string_view bytes) {
  std::string text = "\"";
  for (const char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\' || c < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      text += "\\u00";
      text += kHex[c >> 4];
      text += kHex[c & 0xf];
    } else {
      text += ch;
    }
  }
  text += '"';
  return parse_strict(text).has_value();
}

// One line of printable JSON text: nothing a terminal or a line reader would act on.
void check_printable(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    FUZZ_CHECK(c >= 0x20 && c != 0x7f, "raw control byte in: " + escaped(text));
    if (c == 0xc2 && i + 1 < text.size()) {
      const auto next = static_cast<unsigned char>(text[i + 1]);
      FUZZ_CHECK(next < 0x80 || next > 0x9f, "raw C1 control in: " + escaped(text));
    }
    if (c == 0xe2 && i + 2 < text.size()) {
      FUZZ_CHECK(!(text[i + 1] == '\x80' && (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')),
                 "raw U+2028/U+2029 in: " + escaped(text));
    }
  }
}

json::value parse_document(std::string_view text) {
  auto value = parse_strict(text);
  FUZZ_CHECK(value.has_value(), "Boost.JSON refuses: " + escaped(text));
  return *value;
}

void check_string(const json::value& object, std::string_view name, std::string_view sent,
                  std::string_view text) {
  const json::value* field =
      object.as_object().if_contains(json::string_view(name.data(), name.size()));
  FUZZ_CHECK(field != nullptr && field->is_string(),
             "no string field " + std::string(name) + " in: " + escaped(text));
  const std::string_view read(field->as_string().data(), field->as_string().size());
  FUZZ_CHECK(read == reference_decode(sent),
             std::string(name) + " reads back as " + escaped(read) + ", the reference says " +
                 escaped(reference_decode(sent)) + "; sent " + escaped(sent));
}

void check_number(const json::value& object, std::string_view name, std::uint64_t expected,
                  std::string_view text) {
  const json::value* field =
      object.as_object().if_contains(json::string_view(name.data(), name.size()));
  FUZZ_CHECK(field != nullptr && field->is_number(),
             "no number field " + std::string(name) + " in: " + escaped(text));
  boost::system::error_code error;
  const auto read = field->to_number<std::uint64_t>(error);
  FUZZ_CHECK(!error && read == expected, std::string(name) + " in: " + escaped(text));
}

// ---------------------------------------------------------------------------------------------
// The writers.

void fuzz_escaping(std::string_view input) {
  std::string literal = "x";  // appended to what is there
  json_writer::append_string(literal, input);
  literal.erase(0, 1);
  check_printable(literal);
  const json::value value = parse_document(literal);
  FUZZ_CHECK(value.is_string(), escaped(literal));
  const std::string_view read(value.as_string().data(), value.as_string().size());
  const std::string reference = reference_decode(input);
  FUZZ_CHECK(read == reference, "reads back as " + escaped(read) + ", the reference says " +
                                    escaped(reference) + "; sent " + escaped(input));
  const bool valid = json_writer::is_valid_utf8(input);
  FUZZ_CHECK(valid == boost_json_accepts_as_utf8(input),
             "is_valid_utf8 and Boost.JSON disagree on " + escaped(input));
  FUZZ_CHECK(!valid || read == input, "well-formed text changed: " + escaped(input));
}

void fuzz_decision_log(const std::vector<std::string_view>& field, double duration) {
  for (const auto event :
       {decision_log::Record::Event::decision, decision_log::Record::Event::end}) {
    decision_log::Record r;
    r.event = event;
    r.connection_id = 0xfedcba9876543210u;
    r.client = field[0];
    r.method = field[1];
    r.host = field[2];
    r.port = 65535;
    r.verdict = field[3];
    r.reason = field[4];
    r.rule = field[5];
    r.address = field[6];
    r.detail = field[7];
    r.outcome = field[8];
    r.bytes_up = 1;
    r.bytes_down = 2;
    r.duration_ms = duration;
    std::string line;
    decision_log::format_record(line, sandgate::settings::LogFormat::json, r);
    check_printable(line);
    const json::value value = parse_document(line);
    FUZZ_CHECK(value.is_object(), escaped(line));
    check_number(value, "conn", r.connection_id, line);
    check_number(value, "port", r.port, line);
    using Field = std::pair<std::string_view, std::string_view>;
    for (const auto& [name, sent] : std::initializer_list<Field>{{"client", r.client},
                                                                 {"method", r.method},
                                                                 {"host", r.host},
                                                                 {"verdict", r.verdict},
                                                                 {"reason", r.reason}}) {
      check_string(value, name, sent, line);
    }
    // Optional fields: present exactly when they hold something.
    for (const auto& [name, sent] : std::initializer_list<Field>{
             {"rule", r.rule}, {"address", r.address}, {"detail", r.detail}}) {
      const bool present = value.as_object().contains(json::string_view(name.data(), name.size()));
      FUZZ_CHECK(present == !sent.empty(), std::string(name) + " in: " + escaped(line));
      if (present) {
        check_string(value, name, sent, line);
      }
    }
    if (event == decision_log::Record::Event::end) {
      check_string(value, "outcome", r.outcome, line);
      check_number(value, "bytes_up", 1, line);
      check_number(value, "bytes_down", 2, line);
      const json::value& ms = value.at("duration_ms");
      FUZZ_CHECK(std::isfinite(duration) ? ms.is_number() : ms.is_null(), escaped(line));
    }

    std::string text;
    decision_log::format_record(text, sandgate::settings::LogFormat::text, r);
    FUZZ_CHECK(text.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos,
               "text line broken: " + escaped(text));
  }

  std::string note;
  decision_log::format_note(note, sandgate::settings::LogFormat::json, field[0], field[1]);
  check_printable(note);
  const json::value value = parse_document(note);
  check_string(value, "level", field[0], note);
  check_string(value, "message", field[1], note);
}

void fuzz_denials(const std::vector<std::string_view>& field) {
  metrics::WorkerMetrics worker;
  for (std::int64_t i = 0; i < 2; ++i) {
    metrics::Denial d;
    d.unix_millis = 1000 + i;
    d.connection_id = static_cast<std::uint64_t>(i);
    d.client = std::string(field[static_cast<std::size_t>(i)]);
    d.method = std::string(field[1]);
    d.host = std::string(field[2]);
    d.port = 443;
    d.reason = std::string(field[4]);
    d.rule = std::string(field[5]);
    d.detail = std::string(field[7]);
    worker.record_denial(std::move(d));
  }
  const std::string text = metrics::render_denials_json({&worker});
  const json::value value = parse_document(text);
  FUZZ_CHECK(value.is_array() && value.as_array().size() == 2, escaped(text));
  for (std::size_t i = 0; i < 2; ++i) {
    const json::value& denial = value.as_array()[i];
    const std::size_t conn = 1 - i;  // newest first
    check_number(denial, "conn", conn, text);
    check_number(denial, "unix_ms", 1000 + conn, text);
    check_number(denial, "port", 443, text);
    check_string(denial, "client", field[conn], text);
    check_string(denial, "method", field[1], text);
    check_string(denial, "host", field[2], text);
    check_string(denial, "reason", field[4], text);
    check_string(denial, "rule", field[5], text);
    check_string(denial, "detail", field[7], text);
  }
}

void fuzz_context(const std::vector<std::string_view>& field) {
  const std::string body = sandgate::launchdarkly::context_json(field[0], field[1]);
  check_printable(body);
  const json::value value = parse_document(body);
  check_string(value, "kind", "user", body);
  check_string(value, "key", field[0], body);
  FUZZ_CHECK(value.as_object().contains("username") == !field[1].empty(), escaped(body));
  if (!field[1].empty()) {
    check_string(value, "username", field[1], body);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> pieces;
  for (std::size_t start = 0;;) {
    const auto end = input.find(kSeparator, start);
    pieces.push_back(input.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) {
      break;
    }
    start = end + kSeparator.size();
  }
  std::vector<std::string_view> field(9);
  for (std::size_t i = 0; i < field.size(); ++i) {
    field[i] = pieces[i % pieces.size()];
  }
  double duration = 12.5;
  if (size >= sizeof duration) {
    std::memcpy(&duration, data, sizeof duration);
  }

  fuzz_escaping(input);
  fuzz_decision_log(field, duration);
  fuzz_denials(field);
  fuzz_context(field);
  return 0;
}
