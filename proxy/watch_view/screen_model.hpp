// What `sandgate watch` shows, apart from the terminal: the state of each attached gate (its
// live decisions, the questions waiting, its budgets and bytes per destination) as it reads them
// from the gate's admin routes, and the screen's lines computed from that state for a given
// size. Pure and deterministic (no clock, no terminal): the unit tests give events, questions
// and budgets and read the lines; the ncurses front end (commands/watch.cpp) only draws them.
//
// Everything a gate sent is shown as printable ASCII only (any other byte becomes '?'): a host
// name or a path is a client's bytes, and must not move the cursor or rewrite the screen.
// Bounded: at most kMaxEvents recent events per gate, kMaxRows questions, budgets and
// destinations each (what a screen can show anyway). Not thread-safe: the front end's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::watch_view {

// One line of GET /events.
struct EventRow {
  std::string time;     // "12:04:05" (from the record's ts)
  bool end = false;     // a connection's end line, else a decision
  std::string verdict;  // "allow", "deny", "error", "would-deny"
  std::string method;
  std::string host;
  std::uint16_t port = 0;
  std::string path;
  std::string reason;   // the stable code ("host-blocked")
  std::string detail;   // the human sentence
  std::string outcome;  // end lines: "closed", "reset", ...
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
};

// One entry of GET /pending.
struct QuestionRow {
  std::uint64_t id = 0;
  std::string host;
  std::uint16_t port = 0;
  std::string request;  // "" for a destination's question
  std::uint64_t waiting = 0;
  std::uint64_t age_ms = 0;
};

// One limit of GET /budgets.
struct BudgetRow {
  std::string rule;  // "budgets.txt:2 github.com"
  std::string kind;  // "up", "down", "connections", "requests"
  std::string window;
  std::uint64_t spent = 0;
  std::uint64_t amount = 0;
};

// One row of GET /traffic (host "" for the rest together).
struct TrafficRow {
  std::string host;
  std::uint16_t port = 0;
  std::uint64_t sent = 0;
  std::uint64_t received = 0;
  std::uint64_t connections = 0;
};

// One attached gate as the view knows it.
class GateView {
 public:
  static constexpr std::size_t kMaxEvents = 500;
  static constexpr std::size_t kMaxRows = 64;

  explicit GateView(std::string name) : name_(std::move(name)) {}

  // A line of the event stream: a record, a {"event":"dropped"} notice, or an empty heartbeat.
  // A line that is not JSON is counted as dropped.
  void add_event_line(std::string_view line);
  // The documents of GET /pending, /budgets, /traffic; false (and the old rows kept) when one is
  // not what the route returns.
  bool set_pending(std::string_view json);
  bool set_budgets(std::string_view json);
  bool set_traffic(std::string_view json);
  // Whether the stream is attached, and a line about the last thing done (an answer's result).
  void set_attached(bool attached) { attached_ = attached; }
  void set_status(std::string status) { status_ = std::move(status); }
  // What the gate calls itself (GET /about, name_from_about).
  void set_name(std::string name) { name_ = std::move(name); }

  const std::string& name() const { return name_; }
  bool attached() const { return attached_; }
  const std::string& status() const { return status_; }
  std::uint64_t dropped() const { return dropped_; }
  const std::deque<EventRow>& events() const { return events_; }            // oldest first
  const std::vector<QuestionRow>& questions() const { return questions_; }  // oldest first
  const std::vector<BudgetRow>& budgets() const { return budgets_; }
  const std::vector<TrafficRow>& traffic() const { return traffic_; }

 private:
  std::string name_;
  bool attached_ = false;
  std::string status_;
  std::uint64_t dropped_ = 0;
  std::deque<EventRow> events_;
  std::vector<QuestionRow> questions_;
  std::vector<BudgetRow> budgets_;
  std::vector<TrafficRow> traffic_;
};

enum class Style : std::uint8_t {
  plain,
  title,     // a section's heading and the top line
  selected,  // the question the answer keys apply to
  denied,    // a refused connection
  alert,     // a question waiting, a detached gate
};

struct ScreenLine {
  std::string text;  // printable ASCII, at most the screen's width
  Style style = Style::plain;
};

// Which gate is shown (watch shows one at a time; Tab switches) and which of its questions the
// answer keys apply to (up and down move it).
struct Selection {
  std::size_t gate = 0;
  std::size_t question = 0;
};

// The screen: exactly `rows` lines (empty ones included) of at most `cols` characters. Works
// from 20x6 up; an 80x24 terminal shows every section.
std::vector<ScreenLine> render(const std::vector<GateView>& gates, const Selection& selection,
                               int rows, int cols);

// The answer a key stands for: o once, s session, a always, d deny, n never (either case), as on
// `run`'s terminal; nothing for another key.
std::optional<std::string_view> answer_for_key(int key);

// POST /decide's form body for `question` answered `answer`, by `who`.
std::string decide_form(const QuestionRow& question, std::string_view answer, std::string_view who);

// The name GET /about gives ({"name":"sh","pid":1234}) as the view shows it: "sh 1234";
// nothing when the document is not that.
std::optional<std::string> name_from_about(std::string_view json);

// "[######----]": `spent` of `amount` in `width` cells (at least 3); full when spent >= amount.
std::string bar(std::uint64_t spent, std::uint64_t amount, int width);
// "512 B", "1.5 KB", "12 MB": bytes as people read them (powers of 1000).
std::string human_bytes(std::uint64_t bytes);
// A client's bytes as printable ASCII: every other byte becomes '?'.
std::string printable(std::string_view text);

}  // namespace sandgate::watch_view
