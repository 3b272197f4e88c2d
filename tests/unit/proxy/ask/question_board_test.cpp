// The question board of --unknown=ask (proxy/ask/question_board.hpp) and its admin-side pieces:
// one question per host:port whatever the number of waiters, the bound on questions, the
// answers (once, session, always, deny, never) and what each leaves behind, leaving and timing
// out, close() at the drain; the form body of POST /decide; the atomic append to a list file.
// Waiters live on a real io_context, where the board posts their resolutions.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "proxy/ask/admin_routes.hpp"
#include "proxy/ask/list_append.hpp"
#include "proxy/ask/question_board.hpp"

namespace sandgate::ask {
namespace {

namespace asio = boost::asio;

// A waiting request as a session holds it: a wake timer registered on the waiter, on `io`.
struct Waiting {
  std::shared_ptr<Waiter> waiter;
  std::unique_ptr<asio::steady_timer> wake;
};

Waiting wait_on(QuestionBoard& board, asio::io_context& io, std::string_view host,
                std::uint16_t port, const RequestQuestion* request = nullptr) {
  Waiting w;
  w.waiter = board.ask(host, port, io.get_executor(), request);
  if (!w.waiter->result) {
    w.wake = std::make_unique<asio::steady_timer>(io);
    w.wake->expires_after(std::chrono::hours(1));
    w.waiter->wake = w.wake.get();
  }
  return w;
}

void run_posted(asio::io_context& io) {
  io.restart();
  io.poll();
}

TEST(QuestionBoard, ConcurrentRequestsForOneDestinationShareOneQuestion) {
  asio::io_context io;
  QuestionBoard board;
  board.add_answerer();
  std::vector<Waiting> waiting;
  for (int i = 0; i < 5; ++i) {
    waiting.push_back(wait_on(board, io, "api.example.dev", 443));
  }
  waiting.push_back(wait_on(board, io, "api.example.dev", 8443));  // another port: another one
  const auto pending = board.pending();
  ASSERT_EQ(pending.size(), 2u);
  std::size_t total = 0;
  for (const auto& q : pending) {
    total += q.waiting;
    EXPECT_EQ(q.host, "api.example.dev");
  }
  EXPECT_EQ(total, 6u);

  auto decided = board.answer("api.example.dev", 443, Answer::once, "tester");
  ASSERT_TRUE(decided);
  EXPECT_EQ(*decided, 5u);
  run_posted(io);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(waiting[i].waiter->result);
    EXPECT_EQ(waiting[i].waiter->result->outcome, Outcome::allowed);
    EXPECT_EQ(waiting[i].waiter->result->by, "tester");
  }
  EXPECT_FALSE(waiting[5].waiter->result);
  // `once` is not remembered: the next request asks again.
  auto again = wait_on(board, io, "api.example.dev", 443);
  EXPECT_FALSE(again.waiter->result);
  EXPECT_NE(board.render_prometheus().find("sandgate_ask_questions_total 3\n"), std::string::npos);
  EXPECT_NE(board.render_prometheus().find("sandgate_ask_answers_total{answer=\"once\"} 1\n"),
            std::string::npos);
}

TEST(QuestionBoard, SessionAndNeverAreRememberedOnceAndDenyAreNot) {
  asio::io_context io;
  QuestionBoard board;
  board.add_answerer();
  board.set_recorder([](Answer, std::string_view, std::uint16_t, std::string_view,
                        const RequestQuestion*) { return std::optional<std::string>(); });
  auto first = wait_on(board, io, "a.example", 443);
  ASSERT_TRUE(board.answer("a.example", 443, Answer::session, "t"));
  run_posted(io);
  EXPECT_EQ(first.waiter->result->outcome, Outcome::allowed);
  auto later = wait_on(board, io, "a.example", 443);
  ASSERT_TRUE(later.waiter->result);  // decided at once by the earlier answer
  EXPECT_EQ(later.waiter->result->outcome, Outcome::allowed);

  // `never` needs no pending question, and is remembered as a denial.
  ASSERT_TRUE(board.answer("b.example", 443, Answer::never, "t"));
  auto denied = wait_on(board, io, "b.example", 443);
  ASSERT_TRUE(denied.waiter->result);
  EXPECT_EQ(denied.waiter->result->outcome, Outcome::denied);

  auto asked = wait_on(board, io, "c.example", 443);
  ASSERT_TRUE(board.answer("c.example", 443, Answer::deny, "t"));
  run_posted(io);
  EXPECT_EQ(asked.waiter->result->outcome, Outcome::denied);
  EXPECT_FALSE(wait_on(board, io, "c.example", 443).waiter->result);  // asked again
}

// A budget's `session` answer stands for its limit (RequestQuestion::remembered_as): a later
// question of the same limit asking for another amount is answered by it at once.
TEST(QuestionBoard, ABudgetsSessionAnswerStandsForItsLimitWhateverAmountIsAsked) {
  asio::io_context io;
  QuestionBoard board;
  board.add_answerer();
  RequestQuestion first{"18 kB more sent (budgets.txt:1 x.test: 2 kB per run)",
                        {},
                        {},
                        {},
                        true,
                        "budget x.test up/run"};
  auto asked = wait_on(board, io, "x.test", 8081, &first);
  ASSERT_FALSE(asked.waiter->result);
  ASSERT_TRUE(board.answer("x.test", 8081, Answer::session, "t", first.request));
  run_posted(io);
  EXPECT_EQ(asked.waiter->result->outcome, Outcome::allowed);
  RequestQuestion later = first;
  later.request = "30 kB more sent (budgets.txt:1 x.test: 2 kB per run)";
  auto remembered = wait_on(board, io, "x.test", 8081, &later);
  ASSERT_TRUE(remembered.waiter->result);
  EXPECT_EQ(remembered.waiter->result->outcome, Outcome::allowed);
  RequestQuestion other = later;
  other.remembered_as = "budget y.test up/run";
  EXPECT_FALSE(wait_on(board, io, "x.test", 8081, &other).waiter->result);  // another limit
}

// Review finding (facts F2): a budget question's grant is the question's, shared by all its
// waiters and applied once however many apply it; a remembered answer is a question of its own.
TEST(QuestionBoard, ABudgetQuestionsGrantIsAppliedOncePerQuestion) {
  asio::io_context io;
  QuestionBoard board;
  board.add_answerer();
  int granted = 0;
  RequestQuestion budget{"1 requests more (budgets.txt:1 x.test: 1 requests per run)",
                         {},
                         {},
                         {},
                         true,
                         "budget x.test requests/run",
                         [&granted] { ++granted; }};
  std::vector<Waiting> waiting;
  for (int i = 0; i < 5; ++i) {
    waiting.push_back(wait_on(board, io, "x.test", 80, &budget));
  }
  ASSERT_TRUE(board.answer("x.test", 80, Answer::session, "t", budget.request));
  run_posted(io);
  for (Waiting& w : waiting) {
    ASSERT_TRUE(w.waiter->grant);
    EXPECT_EQ(w.waiter->grant, waiting[0].waiter->grant);
    w.waiter->grant->apply_once();
  }
  EXPECT_EQ(granted, 1);
  auto remembered = wait_on(board, io, "x.test", 80, &budget);
  ASSERT_TRUE(remembered.waiter->result && remembered.waiter->grant);
  remembered.waiter->grant->apply_once();
  remembered.waiter->grant->apply_once();
  EXPECT_EQ(granted, 2);
}

TEST(QuestionBoard, OnceAndDenyNeedAPendingQuestion) {
  QuestionBoard board;
  board.add_answerer();
  auto once = board.answer("nobody.example", 443, Answer::once, "t");
  ASSERT_FALSE(once);
  EXPECT_NE(once.error().find("no question is pending"), std::string::npos);
  EXPECT_FALSE(board.answer("nobody.example", 443, Answer::deny, "t"));
}

TEST(QuestionBoard, AFailedListWriteLeavesTheQuestionPending) {
  asio::io_context io;
  QuestionBoard board;
  board.add_answerer();
  auto w = wait_on(board, io, "a.example", 443);
  // No recorder: `always` cannot be written anywhere.
  EXPECT_FALSE(board.answer("a.example", 443, Answer::always, "t"));
  board.set_recorder(
      [](Answer, std::string_view, std::uint16_t, std::string_view, const RequestQuestion*) {
        return std::optional<std::string>("disk full");
      });
  auto failed = board.answer("a.example", 443, Answer::never, "t");
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error(), "disk full");
  run_posted(io);
  EXPECT_FALSE(w.waiter->result);
  EXPECT_EQ(board.pending().size(), 1u);
}

TEST(QuestionBoard, NoAnswererOrTooManyQuestionsIsUnavailableAtOnce) {
  asio::io_context io;
  std::vector<std::string> notes;
  QuestionBoard board(
      [&notes](std::string_view, std::string_view text) { notes.emplace_back(text); });
  auto nobody = wait_on(board, io, "a.example", 443);
  ASSERT_TRUE(nobody.waiter->result);
  EXPECT_EQ(nobody.waiter->result->outcome, Outcome::unavailable);
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes.back().find("nobody can answer"), std::string::npos);

  board.add_answerer();
  std::vector<Waiting> waiting;
  for (std::size_t i = 0; i < QuestionBoard::kMaxQuestions; ++i) {
    waiting.push_back(wait_on(board, io, "h" + std::to_string(i) + ".example", 443));
    ASSERT_FALSE(waiting.back().waiter->result);
  }
  auto over = wait_on(board, io, "one-more.example", 443);
  ASSERT_TRUE(over.waiter->result);
  // Not `unavailable`: the session denies it whatever the ask default, so that holding 64
  // questions open cannot turn an `allow` default into an allow at once.
  EXPECT_EQ(over.waiter->result->outcome, Outcome::overloaded);
  EXPECT_NE(notes.back().find("it is denied"), std::string::npos) << notes.back();
  // A request for a question already pending still joins it (kept: its timer must outlive the
  // answer posted to it below).
  auto joined = wait_on(board, io, "h0.example", 443);
  EXPECT_FALSE(joined.waiter->result);

  // The last answerer going away leaves nobody to answer what is pending.
  board.remove_answerer();
  run_posted(io);
  for (auto& w : waiting) {
    ASSERT_TRUE(w.waiter->result);
    EXPECT_EQ(w.waiter->result->outcome, Outcome::unavailable);
  }
  EXPECT_TRUE(board.pending().empty());
}

TEST(QuestionBoard, LeavingWithdrawsAnUnwatchedQuestionAndCountsTimeouts) {
  asio::io_context io;
  QuestionBoard board;
  board.add_answerer();
  auto a = wait_on(board, io, "a.example", 443);
  auto b = wait_on(board, io, "a.example", 443);
  a.waiter->wake = nullptr;
  board.leave(a.waiter, false);  // its client left
  ASSERT_EQ(board.pending().size(), 1u);
  EXPECT_EQ(board.pending()[0].waiting, 1u);
  b.waiter->wake = nullptr;
  board.leave(b.waiter, true);  // its timeout passed
  EXPECT_TRUE(board.pending().empty());
  EXPECT_NE(board.render_prometheus().find("sandgate_ask_answers_total{answer=\"timeout\"} 1\n"),
            std::string::npos);
  // An answer for a withdrawn question finds none.
  EXPECT_FALSE(board.answer("a.example", 443, Answer::once, "t"));
}

TEST(QuestionBoard, CloseCancelsEveryWaiterAndEveryLaterQuestion) {
  asio::io_context io;
  QuestionBoard board;
  board.add_answerer();
  auto a = wait_on(board, io, "a.example", 443);
  auto b = wait_on(board, io, "b.example", 80);
  // A waiter whose session stopped waiting is not touched (its timer may be gone).
  b.waiter->wake = nullptr;
  b.wake.reset();
  board.close();
  run_posted(io);
  ASSERT_TRUE(a.waiter->result);
  EXPECT_EQ(a.waiter->result->outcome, Outcome::cancelled);
  EXPECT_FALSE(b.waiter->result);
  auto later = wait_on(board, io, "c.example", 443);
  ASSERT_TRUE(later.waiter->result);
  EXPECT_EQ(later.waiter->result->outcome, Outcome::cancelled);
  board.close();  // idempotent
}

TEST(QuestionBoard, AnswersAreResolvedOnTheWaitersOwnThread) {
  asio::io_context io;
  QuestionBoard board;
  board.add_answerer();
  auto w = wait_on(board, io, "a.example", 443);
  std::thread answering([&board] { (void)board.answer("a.example", 443, Answer::once, "t"); });
  answering.join();
  EXPECT_FALSE(w.waiter->result);  // posted, not yet run on the waiter's thread
  run_posted(io);
  ASSERT_TRUE(w.waiter->result);
}

TEST(AskAnswers, ParseWordsAndInitials) {
  EXPECT_EQ(parse_answer("once"), Answer::once);
  EXPECT_EQ(parse_answer("S"), Answer::session);
  EXPECT_EQ(parse_answer("Always"), Answer::always);
  EXPECT_EQ(parse_answer("d"), Answer::deny);
  EXPECT_EQ(parse_answer("never"), Answer::never);
  EXPECT_FALSE(parse_answer(""));
  EXPECT_FALSE(parse_answer("yes"));
  EXPECT_FALSE(parse_answer("onc"));
}

TEST(DecideForm, ParsesAndNormalises) {
  auto parsed = parse_decide_form("host=API.Example.DEV.&port=8443&answer=session&who=al%20ice");
  ASSERT_TRUE(parsed) << parsed.error();
  EXPECT_EQ(parsed->host, "api.example.dev");
  EXPECT_EQ(parsed->port, 8443);
  EXPECT_EQ(parsed->answer, Answer::session);
  EXPECT_EQ(parsed->who, "al ice");
  auto v6 = parse_decide_form("host=%5B2001%3Adb8%3A%3A1%5D&answer=once");
  ASSERT_TRUE(v6) << v6.error();
  EXPECT_EQ(v6->host, "[2001:db8::1]");
  EXPECT_EQ(v6->port, 443);
  for (const char* bad : {"", "host=a.example", "answer=once", "host=a.example&answer=maybe",
                          "host=a.example&answer=once&port=0", "host=a.example&answer=once&port=x",
                          "host=a.example&answer=once&port=65536", "host=a%zz&answer=once",
                          "host=a%2&answer=once", "host=a..b&answer=once"}) {
    EXPECT_FALSE(parse_decide_form(bad)) << bad;
  }
}

TEST(DecideForm, StatusesOfTheRoute) {
  QuestionBoard board;
  board.add_answerer();
  EXPECT_EQ(decide_from_form(board, "nonsense", "127.0.0.1:1").first, 400u);
  EXPECT_EQ(decide_from_form(board, "host=a.example&answer=once", "127.0.0.1:1").first, 404u);
  EXPECT_EQ(decide_from_form(board, "host=a.example&answer=always", "127.0.0.1:1").first, 409u);
  EXPECT_EQ(decide_from_form(board, "host=a.example&answer=session", "127.0.0.1:1").first, 200u);
  EXPECT_EQ(render_pending_text(board), "no questions pending\n");
  EXPECT_EQ(render_pending_json(board), "[]\n");
}

// ---- the list file ----

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ListAppend, AppendsUnderACommentKeepingTheTextAndMode) {
  char folder[] = "/tmp/sandgate-append-XXXXXX";
  ASSERT_NE(::mkdtemp(folder), nullptr);
  const std::string path = std::string(folder) + "/allow.txt";
  {
    std::ofstream out(path);
    out << "# my list\nexample.com  #! a message\n\nno-newline.example";
  }
  ::chmod(path.c_str(), 0640);
  ASSERT_FALSE(append_entry(path, list_entry("api.example.dev", 443), "alice via sandgate decide"));
  const std::string text = read_file(path);
  EXPECT_TRUE(text.starts_with("# my list\nexample.com  #! a message\n\nno-newline.example\n"))
      << text;
  EXPECT_NE(text.find("# added "), std::string::npos);
  EXPECT_NE(text.find(" by alice via sandgate decide\napi.example.dev:443\n"), std::string::npos)
      << text;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  // A control character in who cannot start a line of its own (a rule).
  ASSERT_FALSE(append_entry(path, list_entry("[2001:db8::1]", 22), "x\nevil.example"));
  const std::string second = read_file(path);
  EXPECT_EQ(second.find("\nevil.example"), std::string::npos) << second;
  EXPECT_NE(second.find("[2001:db8::1]:22\n"), std::string::npos);
  // No temporary file is left behind.
  EXPECT_EQ(std::system(("test $(ls " + std::string(folder) + " | wc -l) -eq 1").c_str()), 0);

  EXPECT_TRUE(append_entry(std::string(folder) + "/missing.txt", "a.example", "t"));
  EXPECT_TRUE(append_entry("", "a.example", "t"));
  std::system(("rm -rf " + std::string(folder)).c_str());
}

// A list file reached through a symbolic link: the file it names gets the entry, the link stays.
TEST(ListAppend, FollowsASymbolicLinkAndKeepsIt) {
  char folder[] = "/tmp/sandgate-append-XXXXXX";
  ASSERT_NE(::mkdtemp(folder), nullptr);
  const std::string real = std::string(folder) + "/real.txt";
  const std::string link = std::string(folder) + "/allow.txt";
  {
    std::ofstream out(real);
    out << "kept.example\n";
  }
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  ASSERT_FALSE(append_entry(link, "added.example:443", "t"));
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_NE(read_file(real).find("kept.example\n# added "), std::string::npos) << read_file(real);
  EXPECT_NE(read_file(real).find("\nadded.example:443\n"), std::string::npos);
  std::system(("rm -rf " + std::string(folder)).c_str());
}

// The replaced file keeps its owner and group (a gate run as root writing a user's list).
TEST(ListAppend, KeepsTheOwner) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root to give the file another owner";
  }
  char folder[] = "/tmp/sandgate-append-XXXXXX";
  ASSERT_NE(::mkdtemp(folder), nullptr);
  const std::string path = std::string(folder) + "/allow.txt";
  {
    std::ofstream out(path);
    out << "kept.example\n";
  }
  if (::chown(path.c_str(), 4242, 4343) != 0) {
    std::system(("rm -rf " + std::string(folder)).c_str());
    GTEST_SKIP() << "cannot give the file another owner here (a user namespace?)";
  }
  ASSERT_FALSE(append_entry(path, "added.example:443", "t"));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 4242u);
  EXPECT_EQ(st.st_gid, 4343u);
  std::system(("rm -rf " + std::string(folder)).c_str());
}

// Answers given at once (the admin endpoint and a terminal) each keep their entry.
TEST(ListAppend, ConcurrentAppendsLoseNoEntry) {
  char folder[] = "/tmp/sandgate-append-XXXXXX";
  ASSERT_NE(::mkdtemp(folder), nullptr);
  const std::string path = std::string(folder) + "/allow.txt";
  {
    std::ofstream out(path);
    out << "# list\n";
  }
  constexpr int kThreads = 8;
  constexpr int kEach = 10;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&path, t] {
      for (int i = 0; i < kEach; ++i) {
        append_entry(path, "h" + std::to_string(t) + "-" + std::to_string(i) + ".example", "t");
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  const std::string text = read_file(path);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kEach; ++i) {
      const std::string entry = "\nh" + std::to_string(t) + "-" + std::to_string(i) + ".example\n";
      EXPECT_NE(text.find(entry), std::string::npos) << entry;
    }
  }
  std::system(("rm -rf " + std::string(folder)).c_str());
}

// A request's question is its own: apart from its destination's and from other requests', its
// answers stand for it alone, and `always` hands the recorder the question's line.
TEST(QuestionBoard, ARequestsQuestionIsAnsweredApartAndAlwaysWritesItsLine) {
  asio::io_context io;
  QuestionBoard board;
  board.add_answerer();
  std::vector<std::string> written;
  board.set_recorder([&written](Answer, std::string_view, std::uint16_t, std::string_view,
                                const RequestQuestion* request) {
    written.push_back(request != nullptr ? request->allow_line : "(destination)");
    return std::optional<std::string>();
  });
  const RequestQuestion pulls{"POST /repos/o/r/pulls", "allow api.github.com POST /repos/o/r/pulls",
                              "deny api.github.com POST /repos/o/r/pulls"};
  const RequestQuestion issues{"POST /repos/o/r/issues", "", ""};
  auto destination = wait_on(board, io, "api.github.com", 443);
  auto first = wait_on(board, io, "api.github.com", 443, &pulls);
  auto second = wait_on(board, io, "api.github.com", 443, &pulls);
  auto other = wait_on(board, io, "api.github.com", 443, &issues);
  const auto pending = board.pending();
  ASSERT_EQ(pending.size(), 3u);  // the destination, and two requests
  // `always` for a request needs its question pending (its line comes from it).
  EXPECT_FALSE(board.answer("api.github.com", 443, Answer::always, "t", "GET /other"));
  written.clear();
  ASSERT_TRUE(board.answer("api.github.com", 443, Answer::always, "t", "POST /repos/o/r/pulls"));
  run_posted(io);
  EXPECT_EQ(written, std::vector<std::string>{"allow api.github.com POST /repos/o/r/pulls"});
  EXPECT_EQ(first.waiter->result->outcome, Outcome::allowed);
  EXPECT_EQ(second.waiter->result->outcome, Outcome::allowed);
  EXPECT_FALSE(other.waiter->result);        // another request's question: still pending
  EXPECT_FALSE(destination.waiter->result);  // and the destination's
  // Remembered for that request only.
  auto later = wait_on(board, io, "api.github.com", 443, &pulls);
  ASSERT_TRUE(later.waiter->result);
  EXPECT_EQ(later.waiter->result->outcome, Outcome::allowed);
  ASSERT_TRUE(board.answer("api.github.com", 443, Answer::deny, "t", "POST /repos/o/r/issues"));
  run_posted(io);
  EXPECT_EQ(other.waiter->result->outcome, Outcome::denied);
}

// An MCP call's question (proxy/mcp/) is named as a person reads it: "allow tool delete_repo on
// mcp.example.com:443?", in notes, prompts and `sandgate pending` alike.
TEST(QuestionBoard, AnMcpCallsQuestionNamesTheCallOnItsHost) {
  EXPECT_EQ(asked_about("mcp.example.com", 443, "tool delete_repo", false, true),
            "tool delete_repo on mcp.example.com:443");
  EXPECT_EQ(asked_about("api.github.com", 443, "POST /repos/o/r/pulls", false),
            "POST api.github.com:443/repos/o/r/pulls");
  std::vector<std::string> notes;
  QuestionBoard board(
      [&notes](std::string_view, std::string_view text) { notes.emplace_back(text); });
  board.add_answerer();
  boost::asio::io_context io;
  RequestQuestion question;
  question.request = "tool delete_repo";
  question.allow_line = "allow mcp.example.com mcp-tool delete_repo";
  question.deny_line = "deny mcp.example.com mcp-tool delete_repo";
  question.mcp_call = true;
  const auto waiter = board.ask("mcp.example.com", 443, io.get_executor(), &question);
  ASSERT_FALSE(waiter->result);
  ASSERT_EQ(board.pending().size(), 1u);
  EXPECT_TRUE(board.pending()[0].mcp_call);
  EXPECT_EQ(notes.back(), "ask: question #1: allow tool delete_repo on mcp.example.com:443?");
  board.close();
}

}  // namespace
}  // namespace sandgate::ask
