// The question board of --unknown=ask: one gate-wide list of the destinations no rule decides
// that requests are waiting on, and the people's answers to them.
//
// A session whose destination no rule decides asks the board (ask()); every request for the
// same host:port waits on the one question, however many there are. Front ends answer it: the
// admin endpoint (GET /pending, POST /decide, and the `sandgate pending` / `sandgate decide`
// commands over it) and, under `sandgate run`, the terminal. An answer wakes every waiter of the
// question:
//   once     allow the requests waiting now
//   session  allow them, and every later request for host:port while the gate runs
//   always   append host:port to the allowlist file (the Recorder), then as session
//   deny     deny the requests waiting now
//   never    append host:port to the blocklist file (the Recorder), deny, and remember it
// The reload of the list file then makes the answer a rule like any other.
//
// Bounds: at most kMaxQuestions questions pending at once (a request for one more is answered
// `overloaded` at once, which the session denies whatever the ask default); the waiters are the
// gate's connections, bounded by its connection limit; at most kMaxRemembered session answers
// (older ones are forgotten first). A board with no front end that can answer (no terminal, no
// admin endpoint) answers every question `unavailable` at once.
//
// Threads: every member function is thread-safe (one mutex, never held across a callback or a
// post). A waiter is woken on its own executor (the session's worker): the board posts the
// resolution there, and only that thread touches the waiter's `wake` and `result`. close() (the
// drain) resolves every waiter `cancelled`, and later questions too, so no wait outlives the
// gate's shutdown.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "rules/expected.hpp"

namespace sandgate::ask {

// A person's answer.
enum class Answer : std::uint8_t { once, session, always, deny, never };
inline constexpr std::size_t kAnswerCount = 5;
std::string_view to_string(Answer answer);  // "once", "session", "always", "deny", "never"
// "once" or "o", ... (any case); nothing for anything else.
std::optional<Answer> parse_answer(std::string_view text);
bool allows(Answer answer);  // once, session, always

// How a request's wait ended.
enum class Outcome : std::uint8_t {
  allowed,      // a person allowed it, now or earlier in the gate's life (session, always)
  denied,       // a person denied it (deny, never; or never earlier)
  unavailable,  // nobody can answer: the ask default applies
  // kMaxQuestions questions are pending: denied whatever the ask default says. Otherwise a client
  // that holds 64 questions open would have every further destination decided at once by an
  // `allow` default, with no person given the time the ask timeout promises.
  overloaded,
  cancelled,  // the gate is shutting down
};

struct Resolution {
  Outcome outcome = Outcome::unavailable;
  std::optional<Answer> answer;  // the answer that decided, when a person's did
  std::string by;                // who answered, and how ("alice via the admin endpoint")
};

// What an allowing answer to a budget's question grants (RequestQuestion::grant), applied once
// per question however many requests wait on it: the first waiter to come back allowed applies
// it, and the waiters then compete for what it granted (those it does not fit ask again).
// Thread-safe.
class Grant {
 public:
  explicit Grant(std::function<void()> apply) : apply_(std::move(apply)) {}
  // Applies the grant if nobody has yet; later calls do nothing.
  void apply_once() {
    if (apply_ && !applied_.exchange(true)) {
      apply_();
    }
  }

 private:
  std::function<void()> apply_;
  std::atomic<bool> applied_{false};
};

// One request waiting on a question. Made by ask(); the session that waits owns the only other
// reference. `wake` and `result` are touched only on `executor`'s thread.
struct Waiter {
  boost::asio::any_io_executor executor;
  std::string key;  // its question's key: "host:port", or "host:port REQUEST"
  // Set by the waiting session while it waits; the board's resolution cancels it.
  boost::asio::steady_timer* wake = nullptr;
  std::optional<Resolution> result;  // set when ask() resolved it at once, or by the board
  // A budget's question: its grant, shared by every waiter of the one question (null for
  // others). The waiter applies it when its wait ends allowed (Grant::apply_once).
  std::shared_ptr<Grant> grant;
};

// A question about one request rather than its destination: under --unknown=ask, a request the
// host's request rules do not decide (request-not-allowed) is asked about ("allow POST
// api.github.com/repos/o/r/pulls?"). It is about the effective request: every method the request
// may act as (its own and those its method overrides name: "GET as DELETE /repos/o/r"), and
// its answers stand for exactly that set and path; `always` and `never` append a line to the
// request-rules file.
struct RequestQuestion {
  // What is asked: "POST /repos/o/r/pulls", "GET as DELETE /repos/o/r", "git push /o/r".
  std::string request;
  std::string allow_line;  // the line `always` appends ("allow github.com git-push /o/r")
  std::string deny_line;   // the line `never` appends
  // Why there are no lines (both empty), as a sentence: the path cannot be written in one, or a
  // line for several methods would stand for more than the set asked about.
  std::string no_line_because = {};
  // A spent egress budget's question ("50 MB more sent (budgets.txt:2 github.com: ...)"): once
  // grants the amount asked for, session each time it is spent again; nothing is written.
  bool budget = false;
  // What a `session` answer is remembered under, when not the question itself: a budget's
  // limit, whatever amount each of its questions asks for.
  std::string remembered_as = {};
  // A budget's question: what an allowing answer grants (the account's amount more). Applied
  // once per question (Grant), not once per request that waits on it; a remembered `session`
  // answer is a new question each time, and grants each time.
  std::function<void()> grant = {};
  // An MCP call's question ("tool delete_repo", proxy/mcp/): named "tool delete_repo on
  // HOST:PORT"; its lines are `mcp-tool` lines.
  bool mcp_call = false;
};

// A question as the front ends show it.
struct PendingQuestion {
  std::uint64_t id = 0;
  std::string host;  // as the log shows it ("api.example.dev", "[2001:db8::1]")
  std::uint16_t port = 0;
  std::string request;      // empty for a destination's question (RequestQuestion::request)
  std::size_t waiting = 0;  // requests waiting on it now
  std::chrono::steady_clock::duration age{};
  bool budget = false;    // a spent budget's question (RequestQuestion::budget)
  bool mcp_call = false;  // an MCP call's question (RequestQuestion::mcp_call)
};

// How notes, questions and prompts name what is asked: "api.github.com:443", "POST
// api.github.com:443/repos/o/r/pulls", for a budget "github.com:443 50 MB more sent (...)", for
// an MCP call "tool delete_repo on mcp.example.com:443".
std::string asked_about(std::string_view host, std::uint16_t port, std::string_view request,
                        bool budget, bool mcp_call = false);

class QuestionBoard {
 public:
  static constexpr std::size_t kMaxQuestions = 64;
  static constexpr std::size_t kMaxRemembered = 4096;

  // Writes an `always` (allowlist) or `never` (blocklist) answer into its list file, or for a
  // request's question (`request` not null) its line into the request-rules file; returns the
  // error sentence, or nothing when the entry is written. Called without the board's lock, on
  // the answering thread.
  using Recorder = std::function<std::optional<std::string>(Answer answer, std::string_view host,
                                                            std::uint16_t port, std::string_view by,
                                                            const RequestQuestion* request)>;
  // Where the board's own notes go (answers, questions refused for the bound): level, text.
  using Note = std::function<void(std::string_view level, std::string_view text)>;
  // Told of every new question (the terminal asker); called without the lock, on the asking
  // session's thread: it must not block.
  using Listener = std::function<void(const PendingQuestion&)>;

  explicit QuestionBoard(Note note = {});

  void set_recorder(Recorder recorder);
  void set_listener(Listener listener);
  // A front end that can answer (the admin endpoint, a terminal) came or went. With none, every
  // question is answered `unavailable` at once.
  void add_answerer();
  void remove_answerer();

  // Asks about host:port for a request on `executor`. The waiter comes back resolved (its
  // `result` set) when a remembered answer, the bound, the lack of answerers or a closed board
  // decides at once; otherwise it waits on the question until resolve posts its result to
  // `executor`, or until the session gives up with leave().
  // `request`: a question about that request (RequestQuestion), not about the destination.
  std::shared_ptr<Waiter> ask(std::string_view host, std::uint16_t port,
                              boost::asio::any_io_executor executor,
                              const RequestQuestion* request = nullptr);
  // The session stops waiting (its client left, its timeout passed). A question left without
  // waiters is withdrawn. `timed_out`: counted as a timeout.
  void leave(const std::shared_ptr<Waiter>& waiter, bool timed_out);

  // Applies a person's answer to host:port. `once` and `deny` need a pending question; the
  // others also stand for later requests. Returns how many waiting requests it decided, or why
  // it was not applied (no such question, the list file could not be written).
  // `request` names a request's question (PendingQuestion::request); `always` and `never` for
  // one need it pending (its lines are the question's).
  Expected<std::size_t, std::string> answer(std::string_view host, std::uint16_t port,
                                            Answer answer, std::string_view by,
                                            std::string_view request = {});

  std::vector<PendingQuestion> pending() const;
  // The questions and answers counters in Prometheus text format.
  std::string render_prometheus() const;

  // The drain: every waiter resolved `cancelled`, and every later ask() too. Idempotent.
  void close();

 private:
  struct Question {
    std::uint64_t id = 0;
    std::string host;
    std::uint16_t port = 0;
    std::chrono::steady_clock::time_point asked;
    std::vector<std::shared_ptr<Waiter>> waiters;
    std::optional<RequestQuestion> request;
    std::string remembered_as;     // the key a `session` answer to it is remembered under
    std::shared_ptr<Grant> grant;  // a budget's question: shared by its waiters
  };
  // Posts `resolution` to each waiter's executor. Without the lock.
  static void resolve(std::vector<std::shared_ptr<Waiter>> waiters, const Resolution& resolution);
  void remember_locked(const std::string& key, bool allowed);

  Note note_;
  mutable std::mutex mutex_;  // guards everything below
  Recorder recorder_;
  Listener listener_;
  int answerers_ = 0;
  bool closed_ = false;
  std::uint64_t next_id_ = 1;
  // By "host:port", or "host:port REQUEST" for a request's question.
  std::map<std::string, Question, std::less<>> questions_;
  std::map<std::string, bool, std::less<>> remembered_;  // key -> allowed
  std::deque<std::string> remembered_order_;             // oldest first, for the bound
  std::uint64_t questions_total_ = 0;
  std::uint64_t answers_total_[kAnswerCount] = {};
  std::uint64_t timeouts_total_ = 0;
  std::uint64_t unavailable_total_ = 0;
  std::uint64_t remembered_hits_total_ = 0;
};

}  // namespace sandgate::ask
