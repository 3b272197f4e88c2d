// Unit tests for the proxy's own replies (proxy/session/wire/replies.hpp): for every reason the
// gate replies with, the status line, the headers (Proxy-Status with the row's error type and the
// reason code, Content-Type, Content-Length that matches the body, Connection: close, the 407
// challenge), and the body; the resolved-address variant; a reason without a reply; and that
// nothing a client sent (a host name quoted in the sentence) can add a header line, split the
// response or put control characters in the body.

#include "proxy/session/wire/replies.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::session {
namespace {

using rules::Reason;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A reply taken apart, checking its framing on the way: CRLF line ends only, every header line
// `Name: value`, the body exactly Content-Length bytes.
struct Parsed {
  std::string status_line;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  std::string header(std::string_view name) const {
    std::string found;
    int count = 0;
    for (const auto& [n, v] : headers) {
      if (n == name) {
        found = v;
        ++count;
      }
    }
    EXPECT_LE(count, 1) << "repeated header " << name;
    return found;
  }
  int count(std::string_view name) const {
    int n = 0;
    for (const auto& h : headers) {
      n += h.first == name ? 1 : 0;
    }
    return n;
  }
};

Parsed parse_reply(const std::string& reply) {
  Parsed out;
  const std::size_t end = reply.find("\r\n\r\n");
  EXPECT_NE(end, std::string::npos) << "no end of head";
  if (end == std::string::npos) {
    return out;
  }
  const std::string head = reply.substr(0, end);
  out.body = reply.substr(end + 4);
  std::vector<std::string> lines;
  for (std::size_t at = 0;;) {
    const std::size_t next = head.find("\r\n", at);
    lines.push_back(head.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) {
      break;
    }
    at = next + 2;
  }
  out.status_line = lines.front();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    // A lone CR or LF in the head would end a line for some parsers and not for others.
    EXPECT_EQ(line.find_first_of("\r\n"), std::string::npos) << "bare CR/LF in: " << line;
    for (const char c : line) {
      const auto byte = static_cast<unsigned char>(c);
      EXPECT_TRUE(byte >= 0x20 && byte < 0x7f) << "non-printable byte in head: " << int(byte);
    }
    if (i == 0) {
      continue;
    }
    const std::size_t colon = line.find(": ");
    EXPECT_NE(colon, std::string::npos) << "not a header line: " << line;
    if (colon != std::string::npos) {
      out.headers.emplace_back(line.substr(0, colon), line.substr(colon + 2));
    }
  }
  EXPECT_EQ(out.header("Content-Length"), std::to_string(out.body.size()));
  return out;
}

// ---- Every reason with a reply ----

TEST(Replies, EveryReplyingReasonHasItsStatusHeadersAndBody) {
  for (const rules::ReasonInfo& row : rules::kReasons) {
    if (row.status == 0) {
      continue;
    }
    SCOPED_TRACE(std::string(row.code));
    const Parsed reply = parse_reply(build_reply(row.reason, "why it happened"));
    EXPECT_EQ(reply.status_line, "HTTP/1.1 " + std::to_string(row.status) + " " +
                                     std::string(status_text(row.status)));
    EXPECT_NE(status_text(row.status), "Error") << "a status without its reason phrase";
    EXPECT_EQ(reply.header("Proxy-Status"),
              "sandgate; error=" + std::string(row.proxy_status_error) + "; details=\"" +
                  std::string(row.code) + ": why it happened\"");
    EXPECT_EQ(reply.header("Content-Type"), "text/plain; charset=utf-8");
    EXPECT_EQ(reply.header("Connection"), "close");
    EXPECT_EQ(reply.count("Proxy-Authenticate"), row.status == 407 ? 1 : 0);
    const std::string verb = row.status >= 500 ? "could not connect" : "refused";
    EXPECT_EQ(reply.body,
              "sandgate: " + verb + " (" + std::string(row.code) + "): why it happened\n");
  }
}

TEST(Replies, BlocklistDenialExactBytes) {
  EXPECT_EQ(build_reply(Reason::blocklist, "evil.com matches blocked.txt:3"),
            "HTTP/1.1 403 Forbidden\r\n"
            "Proxy-Status: sandgate; error=http_request_denied; "
            "details=\"blocklist: evil.com matches blocked.txt:3\"\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n"
            "Content-Length: 62\r\n"
            "Connection: close\r\n"
            "\r\n"
            "sandgate: refused (blocklist): evil.com matches blocked.txt:3\n");
}

TEST(Replies, AuthenticationRepliesCarryTheChallenge) {
  for (const Reason reason : {Reason::auth_required, Reason::auth_failed}) {
    const Parsed reply = parse_reply(build_reply(reason, "token"));
    EXPECT_THAT(reply.status_line, StartsWith("HTTP/1.1 407 Proxy Authentication Required"));
    EXPECT_EQ(reply.header("Proxy-Authenticate"), "Basic realm=\"sandgate\"");
  }
}

TEST(Replies, AResolvedAddressIsDestinationIpProhibitedWhateverTheRule) {
  const Parsed reply =
      parse_reply(build_reply(Reason::blocklist, "10.0.0.1 is listed", DeniedAt::resolved_address));
  EXPECT_THAT(reply.status_line, StartsWith("HTTP/1.1 403 "));
  EXPECT_THAT(reply.header("Proxy-Status"),
              StartsWith("sandgate; error=destination_ip_prohibited; details=\"blocklist: "));
}

TEST(Replies, AReasonWithoutAReplyBecomesAnInternalError) {
  for (const Reason reason : {Reason::allowed, Reason::sni_mismatch, Reason::client_closed}) {
    SCOPED_TRACE(std::string(rules::reason_code(reason)));
    const Parsed reply = parse_reply(build_reply(reason, "x"));
    EXPECT_EQ(reply.status_line, "HTTP/1.1 500 Internal Server Error");
    EXPECT_THAT(reply.header("Proxy-Status"), StartsWith("sandgate; error=proxy_internal_error;"));
    EXPECT_THAT(reply.body, StartsWith("sandgate: could not connect ("));
  }
}

TEST(Replies, StatusTexts) {
  const std::map<unsigned, std::string_view> expected = {{400, "Bad Request"},
                                                         {403, "Forbidden"},
                                                         {407, "Proxy Authentication Required"},
                                                         {408, "Request Timeout"},
                                                         {431, "Request Header Fields Too Large"},
                                                         {500, "Internal Server Error"},
                                                         {502, "Bad Gateway"},
                                                         {503, "Service Unavailable"},
                                                         {504, "Gateway Timeout"}};
  for (const auto& [status, text] : expected) {
    EXPECT_EQ(status_text(status), text) << status;
  }
  EXPECT_EQ(status_text(418), "Error");
}

// ---- Reflected input ----

TEST(Replies, ACrLfInTheSentenceAddsNoHeaderAndEndsNoHead) {
  const std::string sentence =
      "'evil.com\r\nSet-Cookie: a=b\r\n\r\nHTTP/1.1 200 OK' is not a valid host";
  const std::string raw = build_reply(Reason::invalid_host, sentence);
  const Parsed reply = parse_reply(raw);  // checks no bare CR/LF in any head line
  EXPECT_EQ(reply.count("Set-Cookie"), 0);
  EXPECT_EQ(raw.find("\r\n\r\n"), raw.rfind("\r\n\r\n")) << "a second end of head";
  EXPECT_EQ(reply.body.find_first_of("\r"), std::string::npos);
  EXPECT_EQ(reply.body.find('\n'), reply.body.size() - 1) << "only the final line end";
  EXPECT_THAT(reply.header("Proxy-Status"), HasSubstr("evil.com??Set-Cookie: a=b????HTTP/1.1"));
}

TEST(Replies, QuotesAndBackslashesCannotEndTheDetailsString) {
  const Parsed reply = parse_reply(build_reply(Reason::invalid_host, "a\"; error=none; x=\"\\"));
  EXPECT_EQ(reply.header("Proxy-Status"),
            "sandgate; error=http_request_error; details=\"invalid-host: "
            "a\\\"; error=none; x=\\\"\\\\\"");
}

TEST(Replies, ControlAndNonUtf8BytesNeverReachTheBody) {
  const std::string sentence =
      std::string("bell\a esc\x1b[31m nul") + '\0' + " del\x7f bad\xff utf8 \xC3\xA9";
  const Parsed reply = parse_reply(build_reply(Reason::bad_request, sentence));
  for (const char c : reply.body.substr(0, reply.body.size() - 1)) {
    const auto byte = static_cast<unsigned char>(c);
    EXPECT_TRUE(byte >= 0x20 && byte != 0x7f) << "control byte in body: " << int(byte);
  }
  EXPECT_THAT(reply.body, HasSubstr("\xC3\xA9"));      // valid UTF-8 is kept
  EXPECT_THAT(reply.body, HasSubstr("\xEF\xBF\xBD"));  // an ill-formed byte becomes U+FFFD
  EXPECT_THAT(reply.header("Proxy-Status"), HasSubstr("utf8 ??\""));  // sf-string: ASCII only
}

TEST(Replies, LongSentencesAreFramedExactly) {
  const std::string sentence(100'000, 'x');
  const Parsed reply = parse_reply(build_reply(Reason::blocklist, sentence));
  EXPECT_THAT(reply.body, HasSubstr(sentence));
}

TEST(SfString, EscapesAndReplaces) {
  EXPECT_EQ(to_sf_string(""), "\"\"");
  EXPECT_EQ(to_sf_string("plain text 123"), "\"plain text 123\"");
  EXPECT_EQ(to_sf_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(to_sf_string("tab\there"), "\"tab?here\"");
  EXPECT_EQ(to_sf_string("\r\n"), "\"??\"");
  EXPECT_EQ(to_sf_string("\x7f\x80\xff"), "\"???\"");
  EXPECT_EQ(to_sf_string(std::string_view("\0", 1)), "\"?\"");
  EXPECT_EQ(to_sf_string(" ~"), "\" ~\"");  // the printable range's ends are kept
}

}  // namespace
}  // namespace sandgate::session
