// `sandgate watch`'s screen model (proxy/watch_view/screen_model.hpp): the lines shown for a
// given set of events, questions, budgets and traffic, at 80x24 and smaller; what the keys
// answer; that a client's bytes cannot draw on the screen; the bound on kept events.
#include "proxy/watch_view/screen_model.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sandgate::watch_view {
namespace {

constexpr const char* kDecision =
    R"({"ts":"2026-12-06T08:22:15.123Z","event":"decision","conn":7,"client":"10.0.0.2:5000",)"
    R"("method":"CONNECT","host":"evil.test","port":443,"verdict":"deny","reason":"blocklist",)"
    R"("rule":"blocked.txt:1 evil.test","detail":"evil.test is on the blocklist"})";
constexpr const char* kAllowed =
    R"({"ts":"2026-12-06T08:22:16.000Z","event":"decision","conn":8,"method":"GET",)"
    R"("host":"origin.test","port":8080,"path":"/hello","verdict":"allow","reason":"allowed"})";
constexpr const char* kPending =
    R"([{"id":3,"host":"api.example.dev","port":443,"waiting":2,"age_ms":4500},)"
    R"({"id":4,"host":"github.com","port":443,"request":"POST /repos/o/r/pulls","waiting":1,"age_ms":100}])";
constexpr const char* kBudgets =
    R"([{"rule":"budgets.txt:2 github.com","kind":"up","window":"run","spent":5000000,"amount":10000000},)"
    R"({"rule":"budgets.txt:3 *","kind":"connections","window":"hour","spent":120,"amount":100}])";
constexpr const char* kTraffic =
    R"([{"host":"origin.test","port":8080,"sent":1200,"received":34000,"connections":2}])";

GateView busy_gate() {
  GateView gate("sh 1234");
  gate.set_attached(true);
  gate.add_event_line(kDecision);
  gate.add_event_line(kAllowed);
  EXPECT_TRUE(gate.set_pending(kPending));
  EXPECT_TRUE(gate.set_budgets(kBudgets));
  EXPECT_TRUE(gate.set_traffic(kTraffic));
  return gate;
}

std::string joined(const std::vector<ScreenLine>& lines) {
  std::string out;
  for (const auto& line : lines) {
    out += line.text + "\n";
  }
  return out;
}

const ScreenLine* find_line(const std::vector<ScreenLine>& lines, const std::string& text) {
  for (const auto& line : lines) {
    if (line.text.find(text) != std::string::npos) {
      return &line;
    }
  }
  return nullptr;
}

TEST(ScreenModel, An80x24ScreenShowsEverySection) {
  const auto lines = render({busy_gate()}, {}, 24, 80);
  ASSERT_EQ(lines.size(), 24u);
  for (const auto& line : lines) {
    EXPECT_LE(line.text.size(), 80u) << line.text;
  }
  const std::string screen = joined(lines);
  EXPECT_EQ(lines[0].text.rfind("sandgate watch: sh 1234", 0), 0u) << screen;
  // The questions, oldest first, the first chosen.
  const ScreenLine* first = find_line(lines, "allow api.example.dev:443?  2 waiting, 4 s");
  ASSERT_NE(first, nullptr) << screen;
  EXPECT_EQ(first->style, Style::selected);
  EXPECT_EQ(first->text.rfind("> ", 0), 0u);
  const ScreenLine* second = find_line(lines, "allow POST /repos/o/r/pulls github.com:443?");
  ASSERT_NE(second, nullptr) << screen;
  EXPECT_EQ(second->style, Style::plain);
  // Budgets as bars against their amounts; a spent one stands out.
  const ScreenLine* half = find_line(lines, "5.0 MB of 10 MB up/run  budgets.txt:2 github.com");
  ASSERT_NE(half, nullptr) << screen;
  EXPECT_NE(half->text.find("[#######-------]"), std::string::npos) << half->text;
  const ScreenLine* spent = find_line(lines, "120 of 100 connections/hour");
  ASSERT_NE(spent, nullptr) << screen;
  EXPECT_EQ(spent->style, Style::alert);
  EXPECT_NE(spent->text.find("[##############]"), std::string::npos) << spent->text;
  // Bytes per destination.
  EXPECT_NE(find_line(lines, "origin.test:8080  1.2 KB / 34 KB  2 conn"), nullptr) << screen;
  // Decisions with their reasons, newest first; a denial stands out with its sentence.
  const ScreenLine* allowed =
      find_line(lines, "08:22:16 allow GET origin.test:8080/hello  allowed");
  const ScreenLine* denied = find_line(
      lines, "08:22:15 deny  CONNECT evil.test:443  blocklist: evil.test is on the blocklist");
  ASSERT_NE(allowed, nullptr) << screen;
  ASSERT_NE(denied, nullptr) << screen;
  EXPECT_LT(allowed, denied);
  EXPECT_EQ(denied->style, Style::denied);
  EXPECT_EQ(lines.back().text, "attached");
}

TEST(ScreenModel, TheChosenQuestionMovesAndStaysInView) {
  GateView gate("run");
  std::string pending = "[";
  for (int i = 1; i <= 12; ++i) {
    pending += std::string(i == 1 ? "" : ",") + R"({"id":)" + std::to_string(i) + R"(,"host":"h)" +
               std::to_string(i) + R"(.test","port":443,"waiting":1,"age_ms":0})";
  }
  ASSERT_TRUE(gate.set_pending(pending + "]"));
  const auto lines = render({gate}, {0, 10}, 24, 80);
  const ScreenLine* chosen = find_line(lines, "> allow h11.test:443?");
  ASSERT_NE(chosen, nullptr) << joined(lines);
  EXPECT_EQ(chosen->style, Style::selected);
  EXPECT_EQ(find_line(lines, "h1.test"), nullptr) << "the first questions scroll out";
  // Past the last: the last.
  EXPECT_NE(find_line(render({gate}, {0, 99}, 24, 80), "> allow h12.test:443?"), nullptr);
}

TEST(ScreenModel, SeveralGatesShowUnderTheirNamesOneAtATime) {
  GateView quiet("vim 99");
  quiet.set_attached(true);
  const auto lines = render({busy_gate(), quiet}, {1, 0}, 24, 80);
  EXPECT_EQ(lines[0].text.rfind("sandgate watch: vim 99", 0), 0u);
  EXPECT_EQ(lines[1].text, "Tab next:  1 sh 1234 (2?) [2 vim 99]");
  EXPECT_NE(find_line(lines, "none waiting"), nullptr);
}

TEST(ScreenModel, AClientsBytesCannotDrawOnTheScreen) {
  GateView gate("run");
  gate.add_event_line(
      R"({"ts":"2026-12-06T08:22:15Z","event":"decision","method":"GET","host":"x.test","port":80,)"
      R"("path":"/\u001b[2J\u001b]0;owned\u0007\u009b31m\u00e9","verdict":"deny","reason":"r"})");
  ASSERT_TRUE(
      gate.set_pending(R"([{"id":1,"host":"a\u001b[Hb","port":1,"waiting":1,"age_ms":0}])"));
  for (const auto& line : render({gate}, {}, 24, 80)) {
    for (char c : line.text) {
      EXPECT_TRUE(c >= 0x20 && c <= 0x7e)
          << "byte " << int(static_cast<unsigned char>(c)) << " in " << line.text;
    }
  }
  EXPECT_EQ(printable("a\x1b[2Jb\xc3\xa9"), "a?[2Jb??");
}

TEST(ScreenModel, SmallAndOddSizesGiveExactlyThatManyLines) {
  for (const auto& [rows, cols] :
       std::vector<std::pair<int, int>>{{6, 20}, {24, 80}, {10, 40}, {60, 200}, {1, 1}, {0, 0}}) {
    const auto lines = render({busy_gate()}, {}, rows, cols);
    EXPECT_EQ(lines.size(), static_cast<std::size_t>(std::max(rows, 1)));
    for (const auto& line : lines) {
      EXPECT_LE(line.text.size(), static_cast<std::size_t>(std::max(cols, 1)));
    }
  }
  EXPECT_EQ(render({}, {}, 24, 80)[0].text, "sandgate watch: no gate attached  q quit");
}

TEST(ScreenModel, KeptEventsAreBoundedAndDropsAreShown) {
  GateView gate("run");
  gate.set_attached(true);
  for (std::size_t i = 0; i < GateView::kMaxEvents + 50; ++i) {
    gate.add_event_line(kAllowed);
  }
  EXPECT_EQ(gate.events().size(), GateView::kMaxEvents);
  gate.add_event_line(R"({"event":"dropped","count":7})");
  gate.add_event_line("not json");
  gate.add_event_line("");  // the heartbeat: nothing
  EXPECT_EQ(gate.dropped(), 8u);
  EXPECT_EQ(render({gate}, {}, 24, 80).back().text, "attached  8 events dropped (slow reader)");
}

TEST(ScreenModel, ADocumentThatIsNotTheRoutesKeepsWhatWasShown) {
  GateView gate = busy_gate();
  EXPECT_FALSE(gate.set_pending("<html>"));
  EXPECT_FALSE(gate.set_budgets(R"({"not":"an array"})"));
  EXPECT_FALSE(gate.set_traffic(R"([1,2])"));
  EXPECT_EQ(gate.questions().size(), 2u);
  EXPECT_EQ(gate.budgets().size(), 2u);
  EXPECT_EQ(gate.traffic().size(), 1u);
}

TEST(ScreenModel, KeysAnswerAsOnRunsTerminal) {
  const std::vector<std::pair<int, std::optional<std::string_view>>> table = {
      {'o', "once"},       {'O', "once"},       {'s', "session"}, {'a', "always"},
      {'d', "deny"},       {'n', "never"},      {'N', "never"},   {'q', std::nullopt},
      {'x', std::nullopt}, {'\t', std::nullopt}};
  for (const auto& [key, answer] : table) {
    EXPECT_EQ(answer_for_key(key), answer) << static_cast<char>(key);
  }
  const QuestionRow request{4, "github.com", 443, "POST /repos/o/r/pulls", 1, 0};
  EXPECT_EQ(decide_form(request, "once", "ann via sandgate watch"),
            "host=github.com&port=443&answer=once&who=ann%20via%20sandgate%20watch"
            "&request=POST%20%2Frepos%2Fo%2Fr%2Fpulls");
  const QuestionRow v6{5, "[2001:db8::1]", 8443, "", 1, 0};
  EXPECT_EQ(decide_form(v6, "never", "x&y"), "host=[2001:db8::1]&port=8443&answer=never&who=x%26y");
}

TEST(ScreenModel, AGateIsNamedAsItsAboutSays) {
  EXPECT_EQ(name_from_about(R"({"name":"claude","pid":4242})"), "claude 4242");
  EXPECT_EQ(name_from_about(R"({"name":"serve 127.0.0.1:9877"})"), "serve 127.0.0.1:9877");
  EXPECT_EQ(name_from_about(R"({"name":"a\u001b[2Jb","pid":1})"), "a?[2Jb 1");
  EXPECT_EQ(name_from_about("{}"), std::nullopt);
  EXPECT_EQ(name_from_about("not json"), std::nullopt);
}

TEST(ScreenModel, BarsAndAmounts) {
  EXPECT_EQ(bar(0, 100, 12), "[----------]");
  EXPECT_EQ(bar(50, 100, 12), "[#####-----]");
  EXPECT_EQ(bar(100, 100, 12), "[##########]");
  EXPECT_EQ(bar(500, 100, 12), "[##########]");
  EXPECT_EQ(bar(1, 0, 12), "[##########]");
  EXPECT_EQ(bar(1, 2, 0), "[-]");
  EXPECT_EQ(human_bytes(999), "999 B");
  EXPECT_EQ(human_bytes(1200), "1.2 KB");
  EXPECT_EQ(human_bytes(34000), "34 KB");
  EXPECT_EQ(human_bytes(5000000), "5.0 MB");
}

}  // namespace
}  // namespace sandgate::watch_view
