// The event-stream parser: framing as the format defines it (line ends, comments, fields, data
// joining, dispatch), chunk boundaries anywhere, and the limits that bound hostile streams.
#include "proxy/sse/sse_parser.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sandgate::sse {
namespace {

struct Collected {
  std::vector<SseEvent> events;
  int comments = 0;
  bool ok = true;
};

Collected feed_in_chunks(SseParser& parser, const std::vector<std::string>& chunks) {
  Collected out;
  SseParser::Handlers handlers;
  handlers.on_event = [&out](SseEvent&& event) { out.events.push_back(std::move(event)); };
  handlers.on_comment = [&out] { ++out.comments; };
  for (const auto& chunk : chunks) {
    if (!parser.feed(chunk, handlers)) {
      out.ok = false;
      break;
    }
  }
  return out;
}

Collected parse(const std::string& text) {
  SseParser parser;
  return feed_in_chunks(parser, {text});
}

TEST(SseParser, LaunchDarklyPutEvent) {
  auto out = parse("event: put\r\ndata: {\"flag\":{\"value\":true}}\r\n\r\n");
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_EQ(out.events[0].type, "put");
  EXPECT_EQ(out.events[0].data, "{\"flag\":{\"value\":true}}");
}

TEST(SseParser, EveryLineEndingAndDataJoining) {
  for (const std::string eol : {"\n", "\r", "\r\n"}) {
    auto out = parse("event: patch" + eol + "data: a" + eol + "data:b" + eol + "data:  c" + eol +
                     "id: 9" + eol + eol);
    ASSERT_EQ(out.events.size(), 1u);
    EXPECT_EQ(out.events[0].type, "patch");
    EXPECT_EQ(out.events[0].data, "a\nb\n c");  // one space after the colon is dropped, not two
    EXPECT_EQ(out.events[0].id, "9");
  }
}

TEST(SseParser, CommentsAreHeartbeatsAndEventsWithoutDataAreDropped) {
  auto out = parse(":\n: keepalive\n\nevent: put\n\nevent: ping\ndata\n\n");
  EXPECT_EQ(out.comments, 2);
  ASSERT_EQ(out.events.size(), 1u);  // `event: put` alone had no data
  EXPECT_EQ(out.events[0].type, "ping");
  EXPECT_EQ(out.events[0].data, "");  // `data` without a colon is an empty data line
}

TEST(SseParser, DefaultTypeUnknownFieldsAndRetry) {
  SseParser parser;
  auto out = feed_in_chunks(parser, {"foo: bar\nretry: 2500\nretry: x\ndata: hi\n\n"});
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_EQ(out.events[0].type, "message");
  EXPECT_EQ(parser.retry_ms(), 2500u);
}

TEST(SseParser, FieldsResetAfterEachEvent) {
  auto out = parse("event: put\ndata: 1\n\ndata: 2\n\n");
  ASSERT_EQ(out.events.size(), 2u);
  EXPECT_EQ(out.events[1].type, "message");
}

TEST(SseParser, AnIncompleteEventIsNotDispatched) {
  auto out = parse("event: put\ndata: {\"half\":");
  EXPECT_TRUE(out.events.empty());
}

TEST(SseParser, ChunkBoundariesAnywhereGiveTheSameEvents) {
  const std::string text =
      "\xEF\xBB\xBF: hb\r\nevent: put\r\ndata: {\"a\":1}\r\n\r\nevent: patch\rdata: x\r\rdata: "
      "y\n\n";
  const auto whole = parse(text);
  ASSERT_EQ(whole.events.size(), 3u);
  EXPECT_EQ(whole.comments, 1);
  for (std::size_t cut = 1; cut < text.size(); ++cut) {
    SseParser parser;
    auto split = feed_in_chunks(parser, {text.substr(0, cut), text.substr(cut)});
    ASSERT_EQ(split.events.size(), whole.events.size()) << "cut at " << cut;
    for (std::size_t i = 0; i < whole.events.size(); ++i) {
      EXPECT_EQ(split.events[i].type, whole.events[i].type) << "cut at " << cut;
      EXPECT_EQ(split.events[i].data, whole.events[i].data) << "cut at " << cut;
    }
    EXPECT_EQ(split.comments, whole.comments) << "cut at " << cut;
  }
  // A CRLF split between chunks is one line end, not two (which would dispatch early).
  SseParser parser;
  auto crlf = feed_in_chunks(parser, {"data: a\r", "\ndata: b\r", "\n\r", "\n"});
  ASSERT_EQ(crlf.events.size(), 1u);
  EXPECT_EQ(crlf.events[0].data, "a\nb");
}

TEST(SseParser, ByteOrderMarkOnlyAtTheStart) {
  auto out = parse(
      "\xEF\xBB\xBF"
      "data: x\n\n\xEF\xBB\xBF"
      "data: y\n\n");
  ASSERT_EQ(out.events.size(), 1u);  // the second BOM makes an unknown field
  EXPECT_EQ(out.events[0].data, "x");
  auto partial = parse(
      "\xEF\xBB"
      "data: z\n\n");  // not a BOM: an unknown field line
  EXPECT_TRUE(partial.events.empty());
}

TEST(SseParser, LimitsStopHostileStreams) {
  {
    SseParser parser(16, 1024);
    auto out = feed_in_chunks(parser, {"data: 0123456789", "abcdef\n\n"});
    EXPECT_FALSE(out.ok);
    EXPECT_TRUE(parser.failed());
    EXPECT_NE(parser.error().find("line longer than 16"), std::string::npos);
    // Failed stays failed.
    SseParser::Handlers none;
    EXPECT_FALSE(parser.feed("data: x\n\n", none));
  }
  {
    SseParser parser(64, 20);
    auto out = feed_in_chunks(parser, {"data: 0123456789\ndata: 0123456789\n\n"});
    EXPECT_FALSE(out.ok);
    EXPECT_NE(parser.error().find("event larger than 20"), std::string::npos);
    EXPECT_TRUE(out.events.empty());
  }
}

TEST(SseParser, IdOnlyBlocksAndRetryAreToldWhenAsked) {
  SseParser parser;
  std::vector<std::string> ids;
  std::vector<std::size_t> retries;
  std::vector<SseEvent> events;
  SseParser::Handlers handlers;
  handlers.on_event = [&events](SseEvent&& event) { events.push_back(std::move(event)); };
  handlers.on_id_only = [&ids](std::string&& id) { ids.push_back(std::move(id)); };
  handlers.on_retry = [&retries](std::size_t ms) { retries.push_back(ms); };
  // A priming event as MCP servers send it (an id and an empty data line) is an event; an id
  // alone is told apart; an event type alone is nothing; an id with a NUL is ignored.
  using namespace std::string_literals;
  ASSERT_TRUE(parser.feed(
      "id: 1\ndata:\n\nid: 2\n\nretry: 300\nevent: x\n\nid: a\0b\n\ndata: d\n\n"s, handlers));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].id, "1");
  EXPECT_EQ(events[0].data, "");
  EXPECT_EQ(events[1].id, "");  // ids do not carry over from one block to the next
  EXPECT_EQ(ids, std::vector<std::string>{"2"});
  EXPECT_EQ(retries, std::vector<std::size_t>{300});
}

TEST(SseParser, TheLimitsErrorNamesTheSettingGiven) {
  SseParser parser(8, 8, "SANDGATE_LD_MAX_PAYLOAD");
  EXPECT_FALSE(parser.feed("data: 0123456789\n", {}));
  EXPECT_EQ(parser.error(),
            "event stream line longer than 8 bytes (the size limit, SANDGATE_LD_MAX_PAYLOAD)");
  SseParser unnamed(8, 8);
  EXPECT_FALSE(unnamed.feed("data: 0123456789\n", {}));
  EXPECT_EQ(unnamed.error(), "event stream line longer than 8 bytes");
}

}  // namespace
}  // namespace sandgate::sse
