// Every JSON document the gate writes, fed the bytes a hostile client can send (not UTF-8,
// overlong, surrogates, truncated, NUL, controls, quotes): the decision log's JSON lines and
// notes, /denials, and the LaunchDarkly context body. Each must parse with Boost.JSON's strict
// parser and read back as the escaping function defines (proxy/json/json_writer.hpp).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>

#include "proxy/launchdarkly/flag_payload.hpp"
#include "proxy/log/decision_log.hpp"
#include "proxy/metrics/metrics.hpp"
#include "proxy/metrics/prometheus.hpp"

namespace sandgate {
namespace {

using namespace std::string_view_literals;
namespace json = boost::json;

// Hostile field values and what each reads back as.
struct Hostile {
  std::string_view bytes;
  std::string_view reads_as;
};
const Hostile kHostile[] = {
    {"\xff\xfe.example"sv, "\xef\xbf\xbd\xef\xbf\xbd.example"sv},
    {"\xed\xa0\x80"sv, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"sv},
    {"\xc0\xaf"sv, "\xef\xbf\xbd\xef\xbf\xbd"sv},
    {"a\xe2\x82"sv, "a\xef\xbf\xbd"sv},
    {"nul\0del\x7f\"q\"\\\n"sv, "nul\0del\x7f\"q\"\\\n"sv},
    {"m\xc3\xbcnchen\xf0\x9f\x98\x80"sv, "m\xc3\xbcnchen\xf0\x9f\x98\x80"sv},
};

json::value parse_strict(std::string_view text) {
  boost::system::error_code error;
  json::value value = json::parse(json::string_view(text.data(), text.size()), error);
  EXPECT_FALSE(error) << "Boost.JSON refuses: " << error.message() << "\n" << text;
  return value;
}

std::string_view field(const json::value& object, std::string_view name) {
  const json::string& text = object.at(json::string_view(name.data(), name.size())).as_string();
  return {text.data(), text.size()};
}

log::Record hostile_record(std::string_view bytes, log::Record::Event event) {
  log::Record r;
  r.event = event;
  r.connection_id = 7;
  r.client = bytes;
  r.method = bytes;
  r.host = bytes;
  r.port = 443;
  r.verdict = "deny";
  r.reason = bytes;
  r.rule = bytes;
  r.address = bytes;
  r.detail = bytes;
  r.outcome = bytes;
  r.bytes_up = 1;
  r.bytes_down = 2;
  r.duration_ms = 12.5;
  return r;
}

TEST(JsonOutputs, DecisionLogLinesAreValidJsonWhateverTheFieldsHold) {
  for (const Hostile& h : kHostile) {
    for (const auto event : {log::Record::Event::decision, log::Record::Event::end}) {
      std::string line;
      log::format_record(line, settings::LogFormat::json, hostile_record(h.bytes, event));
      EXPECT_EQ(line.find('\n'), std::string::npos) << "one record, one line";
      const json::value value = parse_strict(line);
      ASSERT_TRUE(value.is_object()) << line;
      for (std::string_view name :
           {"client", "method", "host", "reason", "rule", "address", "detail"}) {
        EXPECT_EQ(field(value, name), h.reads_as) << name << " in " << line;
      }
      EXPECT_EQ(value.at("conn").to_number<std::uint64_t>(), 7u);
      EXPECT_EQ(value.at("port").to_number<std::uint64_t>(), 443u);
      if (event == log::Record::Event::end) {
        EXPECT_EQ(field(value, "outcome"), h.reads_as);
        EXPECT_EQ(value.at("duration_ms").to_number<double>(), 12.5);
      }
    }
  }
}

TEST(JsonOutputs, DecisionLogKeepsItsFieldsAndOrder) {
  log::Record r;
  r.connection_id = 3;
  r.client = "127.0.0.1:5000";
  r.method = "CONNECT";
  r.host = "example.com";
  r.port = 443;
  r.reason = "allowed";
  std::string line;
  log::format_record(line, settings::LogFormat::json, r);
  const auto after_ts = line.find("\",\"event\"");
  ASSERT_NE(after_ts, std::string::npos) << line;
  EXPECT_EQ(line.substr(after_ts + 2),
            R"("event":"decision","conn":3,"client":"127.0.0.1:5000","method":"CONNECT",)"
            R"("host":"example.com","port":443,"verdict":"allow","reason":"allowed"})");
}

TEST(JsonOutputs, EndLineWithANonFiniteDurationIsStillJson) {
  auto r = hostile_record("x", log::Record::Event::end);
  r.duration_ms = std::numeric_limits<double>::quiet_NaN();
  std::string line;
  log::format_record(line, settings::LogFormat::json, r);
  EXPECT_TRUE(parse_strict(line).at("duration_ms").is_null()) << line;
}

TEST(JsonOutputs, NotesAreValidJson) {
  for (const Hostile& h : kHostile) {
    std::string line;
    log::format_note(line, settings::LogFormat::json, h.bytes, h.bytes);
    const json::value value = parse_strict(line);
    EXPECT_EQ(field(value, "event"), "log");
    EXPECT_EQ(field(value, "level"), h.reads_as);
    EXPECT_EQ(field(value, "message"), h.reads_as);
  }
}

// The text format is not JSON: it keeps bytes as they came, but a control character never
// breaks the line.
TEST(JsonOutputs, TextLinesStayOneLine) {
  std::string line;
  log::format_record(line, settings::LogFormat::text,
                     hostile_record("a\nb\rc\0d"sv, log::Record::Event::decision));
  EXPECT_EQ(line.find_first_of("\n\r"sv), std::string::npos) << line;
  EXPECT_EQ(line.find('\0'), std::string::npos);
}

// A sentence in quotes (why="...") cannot be ended early by a quote in it: an origin's or a
// parent proxy's words cannot pose as further fields of the line.
TEST(JsonOutputs, TextWhyFieldEscapesQuotes) {
  log::Record r = hostile_record("x"sv, log::Record::Event::decision);
  r.detail = R"(403 Forbidden" verdict="allow \)";
  std::string line;
  log::format_record(line, settings::LogFormat::text, r);
  EXPECT_NE(line.find(R"(why="403 Forbidden\" verdict=\"allow \\")"), std::string::npos) << line;
}

// Through the file, as the gate writes it: every line parses.
TEST(JsonOutputs, DecisionLogFileParsesLineByLine) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("sandgate-json-log-" + std::to_string(::getpid()) + ".log");
  {
    auto log = log::DecisionLog::open(settings::LogFormat::json, path.string());
    ASSERT_TRUE(log) << log.error();
    for (const Hostile& h : kHostile) {
      (*log)->write(hostile_record(h.bytes, log::Record::Event::decision));
      (*log)->write(hostile_record(h.bytes, log::Record::Event::end));
      (*log)->note("warning", h.bytes);
    }
  }
  std::ifstream in(path);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    parse_strict(line);
    ++lines;
  }
  std::filesystem::remove(path);
  EXPECT_EQ(lines, 3 * static_cast<int>(std::size(kHostile)));
}

TEST(JsonOutputs, DenialsAreValidJsonWhateverTheFieldsHold) {
  metrics::WorkerMetrics worker;
  std::int64_t millis = 1000;
  for (const Hostile& h : kHostile) {
    metrics::Denial d;
    d.unix_millis = ++millis;
    d.connection_id = static_cast<std::uint64_t>(millis);
    d.client = std::string(h.bytes);
    d.method = std::string(h.bytes);
    d.host = std::string(h.bytes);
    d.port = 443;
    d.reason = std::string(h.bytes);
    d.rule = std::string(h.bytes);
    d.detail = std::string(h.bytes);
    worker.record_denial(std::move(d));
  }
  const std::string text = metrics::render_denials_json({&worker});
  const json::value value = parse_strict(text);
  ASSERT_TRUE(value.is_array()) << text;
  const json::array& all = value.as_array();
  ASSERT_EQ(all.size(), std::size(kHostile));
  // Newest first: the last recorded is the first listed.
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Hostile& h = kHostile[std::size(kHostile) - 1 - i];
    for (std::string_view name : {"client", "method", "host", "reason", "rule", "detail"}) {
      EXPECT_EQ(field(all[i], name), h.reads_as) << name << " in " << text;
    }
    EXPECT_EQ(all[i].at("port").to_number<int>(), 443);
  }
}

TEST(JsonOutputs, NoDenialsIsAnEmptyArray) {
  metrics::WorkerMetrics worker;
  EXPECT_TRUE(parse_strict(metrics::render_denials_json({&worker})).as_array().empty());
}

TEST(JsonOutputs, LaunchDarklyContextIsValidJsonWhateverTheNamesHold) {
  for (const Hostile& h : kHostile) {
    const std::string body = launchdarkly::context_json(h.bytes, h.bytes);
    const json::value value = parse_strict(body);
    EXPECT_EQ(field(value, "kind"), "user");
    EXPECT_EQ(field(value, "key"), h.reads_as);
    EXPECT_EQ(field(value, "username"), h.reads_as);
  }
}

}  // namespace
}  // namespace sandgate
