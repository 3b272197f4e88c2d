// Fuzz target: the text log's line on arbitrary field values, read back. Every value of a
// decision or end record (client, method, host, port, verdict, reason, rule, address, detail,
// outcome) is taken from the input; the line format_record() writes is parsed back with
// parse_text_line() (proxy/log/text_fields.hpp) and every field must come back byte for byte.
// A value that could end its field early and pose as another one (a SOCKS5 domain with spaces
// and '=', an origin's sentence with a quote) fails here.
//
// Input: the first byte picks the event and verdict, the next two the port; the rest are the
// field values separated by "\n--\n" (field i is piece i modulo the number of pieces).
//
// Invariants, beyond "no out-of-bounds access, no undefined behaviour" (ASan, UBSan):
//   - the line is one line of printable ASCII (no control byte, DEL or byte above 0x7e);
//   - it parses, and each field the format carries reads back as written.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/log/decision_log.hpp"
#include "proxy/log/text_fields.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

namespace decision_log = sandgate::log;
using sandgate::fuzz::escaped;

constexpr std::string_view kSeparator = "\n--\n";

std::vector<std::string_view> pieces(std::string_view data) {
  std::vector<std::string_view> out;
  for (;;) {
    const auto at = data.find(kSeparator);
    out.push_back(data.substr(0, at));
    if (at == std::string_view::npos) {
      return out;
    }
    data.remove_prefix(at + kSeparator.size());
  }
}

std::string_view word_for(const decision_log::Record& r) {
  if (r.event == decision_log::Record::Event::end) {
    return "END";
  }
  return r.verdict == "allow"        ? "ALLOW"
         : r.verdict == "deny"       ? "BLOCK"
         : r.verdict == "would-deny" ? "WOULD-BLOCK"
                                     : "FAIL";
}

void expect_field(const decision_log::TextLine& parsed, std::string_view key,
                  std::string_view value, const std::string& line) {
  const std::string* got = parsed.field(key);
  FUZZ_CHECK(got != nullptr, std::string(key) + " missing in " + escaped(line));
  FUZZ_CHECK(*got == value, std::string(key) + ": " + escaped(*got) + " != " + escaped(value) +
                                " in " + escaped(line));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size < 3) {
    return 0;
  }
  const std::string_view data(reinterpret_cast<const char*>(bytes), size);
  const auto kind = static_cast<unsigned char>(data[0]);
  const std::uint16_t port = static_cast<std::uint16_t>((static_cast<unsigned char>(data[1]) << 8) |
                                                        static_cast<unsigned char>(data[2]));
  const auto values = pieces(data.substr(3));
  const auto value = [&](std::size_t i) { return values[i % values.size()]; };

  decision_log::Record r;
  r.event =
      (kind & 1) != 0 ? decision_log::Record::Event::end : decision_log::Record::Event::decision;
  static constexpr std::string_view kVerdicts[] = {"allow", "deny", "would-deny", "error"};
  r.verdict = kVerdicts[(kind >> 1) & 3];
  r.connection_id = kind;
  r.port = port;
  r.client = value(0);
  r.method = value(1);
  r.host = value(2);
  r.reason = value(3);
  r.rule = value(4);
  r.address = value(5);
  r.detail = value(6);
  r.outcome = value(7);
  r.bytes_up = size;
  r.bytes_down = values.size();

  std::string line;
  decision_log::format_record(line, sandgate::settings::LogFormat::text, r);
  for (const char c : line) {
    const auto byte = static_cast<unsigned char>(c);
    FUZZ_CHECK(byte >= 0x20 && byte < 0x7f, "unprintable byte in " + escaped(line));
  }
  const auto parsed = decision_log::parse_text_line(line);
  FUZZ_CHECK(parsed.has_value(), "does not parse: " + escaped(line));
  FUZZ_CHECK(parsed->connection_id == r.connection_id, escaped(line));
  FUZZ_CHECK(parsed->word == word_for(r), "word in " + escaped(line));
  FUZZ_CHECK(parsed->method == r.method,
             "method " + escaped(parsed->method) + " in " + escaped(line));
  FUZZ_CHECK(parsed->host == r.host, "host " + escaped(parsed->host) + " in " + escaped(line));
  FUZZ_CHECK(parsed->port == r.port, "port in " + escaped(line));
  expect_field(*parsed, "client", r.client, line);
  if (r.event == decision_log::Record::Event::decision) {
    if (r.verdict != "allow") {
      FUZZ_CHECK(parsed->reason && *parsed->reason == r.reason, "reason in " + escaped(line));
      if (!r.detail.empty()) {
        expect_field(*parsed, "why", r.detail, line);
      }
    } else {
      FUZZ_CHECK(!parsed->reason, "a reason on an allow line: " + escaped(line));
      FUZZ_CHECK(parsed->field("why") == nullptr, "why on an allow line: " + escaped(line));
    }
    if (!r.rule.empty()) {
      expect_field(*parsed, "rule", r.rule, line);
    }
    if (!r.address.empty()) {
      expect_field(*parsed, "address", r.address, line);
    }
    const std::size_t fields =
        1 + !r.rule.empty() + !r.address.empty() + (r.verdict != "allow" && !r.detail.empty());
    FUZZ_CHECK(parsed->fields.size() == fields, "extra fields in " + escaped(line));
  } else {
    expect_field(*parsed, "outcome", r.outcome, line);
    expect_field(*parsed, "up", std::to_string(r.bytes_up), line);
    expect_field(*parsed, "down", std::to_string(r.bytes_down), line);
    const bool has_reason = !r.reason.empty() && r.reason != "allowed";
    if (has_reason) {
      expect_field(*parsed, "reason", r.reason, line);
    }
    FUZZ_CHECK(parsed->fields.size() == std::size_t{5} + has_reason,
               "extra fields in " + escaped(line));
  }
  return 0;
}
