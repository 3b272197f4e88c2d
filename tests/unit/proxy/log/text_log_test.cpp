// The text log's values: every field a line carries is escaped by the record's writer, whatever
// call site filled it, and reads back as written (proxy/log/text_fields.hpp).
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "proxy/log/decision_log.hpp"
#include "proxy/log/text_fields.hpp"

namespace sandgate {
namespace {

using namespace std::string_view_literals;

log::Record denial() {
  log::Record r;
  r.connection_id = 7;
  r.client = "10.0.0.5:4100";
  r.method = "SOCKS5";
  r.host = "evil.test";
  r.port = 443;
  r.verdict = "deny";
  r.reason = "blocklist";
  r.rule = "blocked.txt:3 evil.test";
  r.detail = "evil.test is blocked.";
  return r;
}

std::string text(const log::Record& r) {
  std::string line;
  log::format_record(line, settings::LogFormat::text, r);
  return line;
}

// Issue 27: a SOCKS5 domain with spaces and '=' wrote fields of its own into the audit line.
TEST(TextLog, SocksDomainCannotForgeFields) {
  log::Record r = denial();
  r.host = "github.com:443 client=10.9.9.9:1 rule=allowlist:1";
  const std::string line = text(r);
  const auto parsed = log::parse_text_line(line);
  ASSERT_TRUE(parsed) << line;
  EXPECT_EQ(parsed->host, r.host) << line;
  EXPECT_EQ(parsed->port, 443);
  ASSERT_NE(parsed->field("client"), nullptr);
  EXPECT_EQ(*parsed->field("client"), "10.0.0.5:4100");
  EXPECT_EQ(*parsed->field("rule"), "blocked.txt:3 evil.test");
  EXPECT_NE(line.find(R"("github.com:443 client=10.9.9.9:1 rule=allowlist:1":443)"),
            std::string::npos)
      << line;
}

// Every field, not only the host: each value with a space, '=', a quote, a backslash or a byte
// that is not printable ASCII is quoted and escaped, and reads back byte for byte.
TEST(TextLog, EveryFieldIsEscapedAndReadsBack) {
  const std::string_view hostile[] = {"a b",    "a=b",      "a\"b",         "a\\b", "a\nb", "a\rb",
                                      "a\0b"sv, "\x1b[31m", "\xe2\x80\xae", "",     "(x)",  "a:1"};
  for (const std::string_view value : hostile) {
    for (int event = 0; event < 2; ++event) {
      log::Record r = denial();
      r.event = event == 0 ? log::Record::Event::decision : log::Record::Event::end;
      r.client = r.method = r.host = r.reason = r.rule = r.address = r.detail = r.outcome = value;
      r.port = event == 0 ? 0 : 80;
      const std::string line = text(r);
      for (const char c : line) {
        ASSERT_TRUE(static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f)
            << line;
      }
      const auto parsed = log::parse_text_line(line);
      ASSERT_TRUE(parsed) << line;
      EXPECT_EQ(parsed->method, value) << line;
      EXPECT_EQ(parsed->host, value) << line;
      EXPECT_EQ(parsed->port, r.port) << line;
      EXPECT_EQ(*parsed->field("client"), value) << line;
      if (event == 0) {
        ASSERT_TRUE(parsed->reason) << line;
        EXPECT_EQ(*parsed->reason, value) << line;
        if (!value.empty()) {
          EXPECT_EQ(*parsed->field("rule"), value) << line;
          EXPECT_EQ(*parsed->field("address"), value) << line;
          EXPECT_EQ(*parsed->field("why"), value) << line;
        }
      } else {
        EXPECT_EQ(*parsed->field("outcome"), value) << line;
      }
    }
  }
}

// An MCP call's line names the call (never its arguments) in its own field, both formats.
TEST(TextLog, AnMcpCallHasItsOwnField) {
  log::Record r = denial();
  r.method = "POST";
  r.host = "mcp.example.com";
  r.path = "/mcp";
  r.call = "tool delete_repo";
  r.reason = "request-denied";
  const std::string line = text(r);
  EXPECT_NE(line.find(" path=/mcp call=\"tool delete_repo\" "), std::string::npos) << line;
  const auto parsed = log::parse_text_line(line);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(*parsed->field("call"), "tool delete_repo");
  std::string json;
  log::format_record(json, settings::LogFormat::json, r);
  EXPECT_NE(json.find(R"("path":"/mcp","call":"tool delete_repo")"), std::string::npos) << json;
}

// A WebSocket message's line (--log-websocket-messages): its own word and fields, its contents
// always quoted and escaped, whatever the message held, in both formats.
TEST(TextLog, AWebSocketMessageHasItsOwnLineAndItsContentsReadBack) {
  log::Record r = denial();
  r.event = log::Record::Event::message;
  r.method = "GET";
  r.host = "api.example.com";
  r.path = "/v1/realtime";
  r.direction = "down";
  r.message_kind = "text";
  r.message_size = 70000;
  const std::string contents = "{\"a\":1}\n up=1 outcome=closed \x1b[31m \"";
  r.contents = contents;
  r.contents_cut = true;
  const std::string line = text(r);
  EXPECT_NE(line.find(" MESSAGE GET api.example.com:443 "), std::string::npos) << line;
  EXPECT_NE(line.find(" direction=down kind=text size=70000 cut=1 contents=\""), std::string::npos)
      << line;
  EXPECT_EQ(line.find("BLOCK"), std::string::npos) << line;
  EXPECT_EQ(line.find("unfinished"), std::string::npos) << line;
  const auto parsed = log::parse_text_line(line);
  ASSERT_TRUE(parsed) << line;
  EXPECT_EQ(parsed->word, "MESSAGE");
  ASSERT_NE(parsed->field("contents"), nullptr) << line;
  EXPECT_EQ(*parsed->field("contents"), contents);
  EXPECT_EQ(parsed->field("outcome"), nullptr) << "the contents pose as no field: " << line;
  std::string json;
  log::format_record(json, settings::LogFormat::json, r);
  EXPECT_NE(json.find(R"("event":"message")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("direction":"down","kind":"text","size":70000,"contents":"{\"a\":1}\n)"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("cut":true})"), std::string::npos) << json;
  EXPECT_EQ(json.find("verdict"), std::string::npos) << json;
}

// Values that need nothing stay as they were: the line reads as before for ordinary traffic.
TEST(TextLog, PlainValuesAreWrittenAsTheyAre) {
  const std::string line = text(denial());
  EXPECT_NE(line.find(" conn=7 BLOCK SOCKS5 evil.test:443 (blocklist) client=10.0.0.5:4100 "
                      "rule=\"blocked.txt:3 evil.test\" why=\"evil.test is blocked.\""),
            std::string::npos)
      << line;
  log::Record v6 = denial();
  v6.host = "[::1]";
  EXPECT_NE(text(v6).find(" [::1]:443 "), std::string::npos) << text(v6);
}

TEST(TextLog, EscapesAsDocumented) {
  std::string out;
  log::append_text_value(out, "plain");
  log::append_text_value(out, "");
  log::append_text_value(out, "say \"hi\"\\\x01\xff=");
  EXPECT_EQ(out, R"(plain"""say \"hi\"\\\x01\xff=")");
}

}  // namespace
}  // namespace sandgate
