// The plain-HTTP exchange's state machine (proxy/session/fronts/http_exchange_state.hpp): each way
// an exchange can go, as the two directions report it, and the ending derived from it (the end
// line's outcome and reason, the proxy's answer, whether either connection is kept). The
// integration tests (tests/integration/http_forward_test.cpp) drive the same paths over sockets.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "proxy/session/fronts/http_exchange_state.hpp"

namespace sandgate::session {
namespace {

using Kind = ExchangeState::Ending::Kind;
using rules::Reason;

struct Case {
  const char* name;
  std::function<void(ExchangeState&)> events;  // what the directions report, in order
  bool request_all_read;
  Kind kind;
  std::string_view outcome;
  std::optional<Reason> reason;
  std::string sentence;
  bool keeps_client;
  bool reusable_upstream;
};

class EndingTest : public ::testing::TestWithParam<Case> {};

TEST_P(EndingTest, IsDerivedFromTheState) {
  const Case& c = GetParam();
  ExchangeState state;
  c.events(state);
  const auto end = state.ending("o.test:80", 30, c.request_all_read, 80);
  EXPECT_EQ(end.kind, c.kind);
  EXPECT_EQ(end.outcome, c.outcome);
  EXPECT_EQ(end.reason, c.reason);
  EXPECT_EQ(end.sentence, c.sentence);
  EXPECT_EQ(state.keeps_client(), c.keeps_client);
  EXPECT_EQ(state.reusable_upstream(), c.reusable_upstream);
}

INSTANTIATE_TEST_SUITE_P(
    Exchanges, EndingTest,
    ::testing::Values(
        Case{"complete_kept_alive",
             [](ExchangeState& s) {
               s.request_side_ended(true);
               s.response_started(true);
               s.response_ended(true, true);
               EXPECT_FALSE(s.abandon_request(true));
             },
             true, Kind::complete, "closed", std::nullopt, "", true, true},
        Case{"complete_origin_closes",
             [](ExchangeState& s) {
               s.request_side_ended(true);
               s.response_started(true);
               s.response_ended(true, false);
             },
             true, Kind::complete, "closed", std::nullopt, "", true, false},
        Case{"complete_framed_by_close",
             [](ExchangeState& s) {
               s.request_side_ended(true);
               s.response_started(false);
               s.response_ended(true, false);
             },
             true, Kind::complete, "closed", std::nullopt, "", false, false},
        Case{"early_answer_abandons_the_upload",
             [](ExchangeState& s) {
               s.response_started(false);
               s.response_ended(true, true);
               EXPECT_TRUE(s.abandon_request(false));
               EXPECT_TRUE(s.request_should_stop());
               s.request_side_ended(false);
               EXPECT_EQ(s.request(), RequestPhase::abandoned);
             },
             false, Kind::complete, "closed", std::nullopt, "", false, false},
        Case{"origin_stopped_reading_then_answered",
             [](ExchangeState& s) {
               s.origin_stopped_reading();
               s.request_side_ended(false);
               s.response_started(false);
               s.response_ended(true, true);
               EXPECT_TRUE(s.abandon_request(false));
             },
             false, Kind::complete, "closed", std::nullopt, "", false, false},
        Case{"client_left_before_any_response",
             [](ExchangeState& s) {
               s.client_read_failed("");
               EXPECT_TRUE(s.response_should_stop());
               s.request_side_ended(false);
               EXPECT_FALSE(s.abandon_request(false));
             },
             false, Kind::silent, "reset", std::nullopt, "", false, false},
        Case{"continue_could_not_be_written",
             [](ExchangeState& s) { s.client_write_failed(); }, false, Kind::silent, "reset",
             std::nullopt, "", false, false},
        Case{"malformed_body_is_a_400",
             [](ExchangeState& s) {
               s.client_read_failed("the request body is malformed: bad chunk.");
               s.request_side_ended(false);
             },
             false, Kind::answer, "error", Reason::bad_request,
             "the request body is malformed: bad chunk.", false, false},
        Case{"origin_failure_before_its_head",
             [](ExchangeState& s) {
               s.request_side_ended(true);
               s.origin_failed(Reason::bad_response, "first");
               s.origin_failed(Reason::upstream_closed, "second");  // the first one wins
             },
             true, Kind::answer, "error", Reason::bad_response, "first", false, false},
        Case{"origin_closed_without_a_word",
             [](ExchangeState& s) { s.request_side_ended(true); }, true, Kind::answer, "error",
             Reason::upstream_closed, "o.test:80 closed the connection without a response.",
             false, false},
        Case{"stalled_upload_times_out",
             [](ExchangeState& s) {
               s.timed_out();
               EXPECT_TRUE(s.request_should_stop());
               s.request_side_ended(false);
               EXPECT_EQ(s.request(), RequestPhase::stopped);
             },
             false, Kind::answer, "error", Reason::request_timeout,
             "the request body stalled for 30 s.", false, false},
        Case{"silent_origin_times_out",
             [](ExchangeState& s) {
               s.request_side_ended(true);
               s.timed_out();
             },
             true, Kind::answer, "error", Reason::response_timeout,
             "o.test:80 sent no response for 30 s.", false, false},
        Case{"client_gone_and_timed_out_still_answers",
             [](ExchangeState& s) {
               s.client_read_failed("");
               s.timed_out();
             },
             true, Kind::answer, "error", Reason::response_timeout,
             "o.test:80 sent no response for 30 s.", false, false},
        Case{"cut_off_mid_body",
             [](ExchangeState& s) {
               s.request_side_ended(true);
               s.response_started(true);
               s.response_ended(false, true);
             },
             true, Kind::broken, "reset", std::nullopt, "", false, false},
        Case{"cut_off_mid_body_saying_why",
             [](ExchangeState& s) {
               s.request_side_ended(true);
               s.response_started(true);
               s.origin_failed(Reason::upstream_closed, "o.test:80: the origin reset it.");
               s.response_ended(false, true);
             },
             true, Kind::broken, "reset", std::nullopt, "o.test:80: the origin reset it.", false,
             false},
        Case{"timed_out_mid_body",
             [](ExchangeState& s) {
               s.request_side_ended(true);
               s.response_started(true);
               s.timed_out();
               s.response_ended(false, true);
             },
             true, Kind::broken, "timeout", std::nullopt, "", false, false},
        Case{"oversized_trailer",
             [](ExchangeState& s) {
               s.request_side_ended(true);
               s.response_started(true);
               s.timed_out();
               s.response_oversized();
               s.response_ended(false, true);  // no effect: it stays oversized
               EXPECT_EQ(s.response(), ResponsePhase::oversized);
             },
             true, Kind::broken, "error", Reason::bad_response,
             "o.test:80 sent a chunk header or trailer section larger than 80 KiB; the response "
             "was cut off.",
             false, false},
        Case{"websocket",
             [](ExchangeState& s) {
               s.request_side_ended(true);
               s.upgraded();
               EXPECT_FALSE(s.abandon_request(false));  // the stream after a 101 is the tunnel's
             },
             true, Kind::websocket, "", std::nullopt, "", false, false},
        Case{"interim_write_failed_after_the_request_was_sent",
             [](ExchangeState& s) {
               s.request_side_ended(true);
               s.client_write_failed();
             },
             true, Kind::silent, "reset", std::nullopt, "", false, false},
        Case{"client_broke_while_the_body_was_read",
             [](ExchangeState& s) {
               s.client_write_failed();
               s.request_side_ended(true);
               EXPECT_EQ(s.request(), RequestPhase::client_failed);
               s.response_started(false);
               s.response_ended(true, true);
             },
             true, Kind::complete, "closed", std::nullopt, "", false, false}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(ExchangeState, TransitionsOnlyLeaveTheirOwnPhase) {
  ExchangeState s;
  s.origin_failed(Reason::bad_response, "no");
  s.response_started(true);  // a failed response does not start
  s.upgraded();
  EXPECT_EQ(s.response(), ResponsePhase::failed);

  ExchangeState t;
  t.origin_stopped_reading();
  t.client_read_failed("late");  // the origin's failure came first
  t.request_side_ended(true);
  EXPECT_EQ(t.request(), RequestPhase::origin_stopped);
  EXPECT_TRUE(t.client_failed());
}

TEST(ExchangeState, PhasesHaveNames) {
  EXPECT_STREQ(to_string(RequestPhase::abandoned), "abandoned");
  EXPECT_STREQ(to_string(ResponsePhase::cut_off), "cut-off");
}

}  // namespace
}  // namespace sandgate::session
