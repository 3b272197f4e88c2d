// The admin routes `sandgate watch` reads, over real sockets: GET /events streamed from the
// decision log's feed (what a gate decides arrives as a JSON line), its bounds (a slow reader
// loses lines, counted, not the gate's memory; streams are capped; a reader that never reads is
// cut off), the count of answering watchers going up and back down, the token, /budgets and
// /traffic from a real gate, and `run`'s private unix socket (0600, its own user only).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

#include "proxy/admin/admin_server.hpp"
#include "proxy/watch_view/admin_client.hpp"
#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/eventually.hpp"

namespace sandgate::testing {
namespace {

using namespace std::chrono_literals;
using watch_view::AdminAddress;
using watch_view::EventStream;

// A fresh folder under the test's temporary folder (0700, as mkdtemp makes it).
std::string scratch(const std::string& name) {
  std::string folder = std::string(::testing::TempDir()) + "/" + name + "-XXXXXX";
  if (::mkdtemp(folder.data()) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  return folder;
}

// An admin endpoint on 127.0.0.1:0 over a feed the test publishes into.
struct FeedAdmin {
  explicit FeedAdmin(admin::AdminLimits limits = {}, log::EventFeedLimits feed_limits = {},
                     std::string admin_token = {})
      : feed(feed_limits) {
    admin::AdminHandlers handlers;
    handlers.events = &feed;
    handlers.admin_token = [admin_token] { return admin_token; };
    handlers.budgets = [] { return std::string("[]\n"); };
    handlers.answering_changed = [this](std::size_t n) { answering.store(n); };
    server = std::make_unique<admin::AdminServer>(std::move(handlers), limits);
    auto bound = server->start({"127.0.0.1", 0});
    EXPECT_TRUE(bound);
    where.host = "127.0.0.1";
    where.port = static_cast<std::uint16_t>(std::stoul(bound->substr(bound->rfind(':') + 1)));
  }
  log::EventFeed feed;
  std::atomic<std::size_t> answering{0};
  std::unique_ptr<admin::AdminServer> server;
  AdminAddress where;
};

// Reads the stream's lines until `done` holds for what was read so far.
std::vector<std::string> read_until(
    EventStream& stream, const std::function<bool(const std::vector<std::string>&)>& done,
    std::chrono::milliseconds timeout = 5s) {
  std::vector<std::string> lines;
  eventually(
      [&] {
        for (auto& line : stream.read_lines()) {
          lines.push_back(std::move(line));
        }
        return done(lines) || stream.closed();
      },
      timeout);
  return lines;
}

TEST(WatchRoutes, EventsStreamsTheHistoryThenEachLineAsItComes) {
  FeedAdmin admin;
  admin.feed.publish(R"({"n":1})");
  auto stream = EventStream::open(admin.where, false);
  ASSERT_TRUE(stream) << stream.error();
  admin.feed.publish(R"({"n":2})");
  const auto lines = read_until(*stream, [](const auto& got) { return got.size() >= 2; });
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], R"({"n":1})");
  EXPECT_EQ(lines[1], R"({"n":2})");
  EXPECT_EQ(admin.answering.load(), 0u) << "a stream without ?answer=1 answers nothing";
}

TEST(WatchRoutes, AQuietStreamSendsAnEmptyLineSoADeadGateCanBeTold) {
  admin::AdminLimits limits;
  limits.stream_heartbeat = 200ms;
  FeedAdmin admin(limits);
  auto stream = EventStream::open(admin.where, false);
  ASSERT_TRUE(stream) << stream.error();
  const auto lines = read_until(*stream, [](const auto& got) { return !got.empty(); });
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "");
}

// The feed's queue for one reader is 4 KiB; 1,000 lines of 100 bytes arrive between two of the
// stream's looks. What does not fit is dropped and the reader is told how many.
TEST(WatchRoutes, ASlowReaderLosesLinesNotTheGatesMemoryAndIsToldHowMany) {
  admin::AdminLimits limits;
  limits.stream_poll = 500ms;
  log::EventFeedLimits feed_limits;
  feed_limits.max_queued_bytes = 4096;
  FeedAdmin admin(limits, feed_limits);
  auto stream = EventStream::open(admin.where, false);
  ASSERT_TRUE(stream) << stream.error();
  ASSERT_TRUE(eventually([&] { return admin.feed.subscribers() == 1; }));
  const std::string line = "{\"pad\":\"" + std::string(89, 'x') + "\"}";  // 100 bytes with \n
  for (int i = 0; i < 1000; ++i) {
    admin.feed.publish(line);
  }
  std::uint64_t dropped = 0;
  std::size_t kept = 0;
  read_until(*stream, [&](const auto& got) {
    dropped = 0;
    kept = 0;
    for (const auto& l : got) {
      if (l.starts_with(R"({"event":"dropped","count":)")) {
        dropped += std::stoull(l.substr(27));
      } else if (l == line) {
        ++kept;
      }
    }
    return kept + dropped == 1000;
  });
  EXPECT_EQ(kept + dropped, 1000u);
  EXPECT_LE(kept, 4096u / line.size() + 1);
  EXPECT_GT(dropped, 900u);
}

TEST(WatchRoutes, StreamsAreCappedAndOneMoreIsAnswered503) {
  admin::AdminLimits limits;
  limits.max_streams = 2;
  FeedAdmin admin(limits);
  auto first = EventStream::open(admin.where, false);
  auto second = EventStream::open(admin.where, false);
  ASSERT_TRUE(first && second);
  auto third = EventStream::open(admin.where, false);
  ASSERT_FALSE(third);
  EXPECT_NE(third.error().find("HTTP 503"), std::string::npos) << third.error();
  // An ordinary request still gets through beside them.
  auto budgets = watch_view::exchange(admin.where, "GET", "/budgets");
  ASSERT_TRUE(budgets) << budgets.error();
  EXPECT_EQ(budgets->status, 200u);
  first = Unexpected{std::string("closed")};  // the first stream ends: its place is free
  EXPECT_TRUE(eventually([&] { return static_cast<bool>(EventStream::open(admin.where, false)); }));
}

TEST(WatchRoutes, AReaderThatNeverReadsIsCutOffAtTheWriteDeadline) {
  admin::AdminLimits limits;
  limits.response_timeout = 300ms;
  FeedAdmin admin(limits);
  TestClient client(admin.where.port);
  client.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  ASSERT_TRUE(eventually([&] { return admin.feed.subscribers() == 1; }));
  // Far more than the socket buffers hold; the client reads none of it.
  const std::string line(8000, 'x');
  EXPECT_TRUE(eventually(
      [&] {
        for (int i = 0; i < 100; ++i) {
          admin.feed.publish(line);
        }
        return admin.feed.subscribers() == 0;
      },
      10s))
      << "still writing to a stuck reader";
  EXPECT_EQ(admin.server->open_connections(), 0u);
}

TEST(WatchRoutes, AnsweringWatchersAreCountedWhileTheyAreAttached) {
  FeedAdmin admin;
  {
    auto one = EventStream::open(admin.where, true);
    auto two = EventStream::open(admin.where, true);
    ASSERT_TRUE(one && two);
    EXPECT_TRUE(eventually([&] { return admin.answering.load() == 2; }));
  }
  EXPECT_TRUE(eventually([&] { return admin.answering.load() == 0; }))
      << "a watcher that left still counts as answering";
}

TEST(WatchRoutes, TheRoutesNeedTheAdminTokenLikeTheQuestions) {
  FeedAdmin admin({}, {}, "s3cret");
  for (const char* route : {"/events", "/budgets", "/traffic", "/about"}) {
    auto reply = watch_view::exchange(admin.where, "GET", route);
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_EQ(reply->status, 401u) << route;
  }
  EXPECT_FALSE(EventStream::open(admin.where, true));
  EXPECT_EQ(admin.answering.load(), 0u);
  admin.where.bearer = "s3cret";
  EXPECT_TRUE(EventStream::open(admin.where, true));
  // A web page is refused whatever it holds.
  TestClient page(admin.where.port);
  page.send(
      "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://evil.example\r\n"
      "Authorization: Bearer s3cret\r\n\r\n");
  EXPECT_NE(page.read_to_end().find("HTTP/1.1 403"), std::string::npos);
}

// A real gate: what it decides reaches the stream with the reason, and /budgets and /traffic
// say what it spent and carried.
TEST(WatchRoutes, AGatesDecisionsBudgetsAndTrafficReachTheWatch) {
  fakes::TcpOrigin origin;
  const std::string budgets = scratch("watch-routes") + "/budgets.txt";
  std::ofstream(budgets) << "origin.test up=1MB\n";
  TestProxy proxy("evil.test\n", [&](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.admin = settings::TcpEndpoint{"127.0.0.1", 0};
    s.budgets_path = budgets;
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  AdminAddress where;
  where.host = "127.0.0.1";
  const std::string& address = proxy.gate().admin_address();
  where.port = static_cast<std::uint16_t>(std::stoul(address.substr(address.rfind(':') + 1)));
  auto stream = EventStream::open(where, false);
  ASSERT_TRUE(stream) << stream.error();
  {
    TestClient client(proxy.port());
    ASSERT_EQ(send_connect(client, "api.evil.test:443").status, 403);
  }
  {
    TestClient client(proxy.port());
    ASSERT_EQ(send_connect(client, "origin.test:" + std::to_string(origin.port())).status, 200);
    client.send(std::string(1000, 'x'));
    ASSERT_EQ(client.read_exact(1000).size(), 1000u);
    client.shutdown_write();
    client.read_to_end();
  }
  const auto lines = read_until(*stream, [](const auto& got) {
    return std::any_of(got.begin(), got.end(), [](const std::string& l) {
      return l.find("\"event\":\"end\"") != std::string::npos;
    });
  });
  const auto denied = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("\"host\":\"api.evil.test\"") != std::string::npos;
  });
  ASSERT_NE(denied, lines.end());
  EXPECT_NE(denied->find("\"verdict\":\"deny\""), std::string::npos) << *denied;
  EXPECT_NE(denied->find("\"reason\":\"blocklist\""), std::string::npos) << *denied;

  auto spent = watch_view::exchange(where, "GET", "/budgets");
  ASSERT_TRUE(spent) << spent.error();
  EXPECT_NE(spent->body.find(R"("kind":"up","window":"run","spent":1000,"amount":1000000)"),
            std::string::npos)
      << spent->body;
  auto traffic = watch_view::exchange(where, "GET", "/traffic");
  ASSERT_TRUE(traffic) << traffic.error();
  EXPECT_NE(traffic->body.find(R"("host":"origin.test")"), std::string::npos) << traffic->body;
  EXPECT_NE(traffic->body.find(R"("sent":1000,"received":1000)"), std::string::npos)
      << traffic->body;
}

// `run`'s socket: made 0600, serves this user; a connection from another user is closed
// unanswered (SO_PEERCRED), even where the path's modes would let it in.
TEST(WatchRoutes, ThePrivateSocketIs0600AndServesOnlyItsOwnUser) {
  const std::string folder = scratch("watch-private");
  const std::string path = folder + "/1.sock";
  admin::AdminHandlers handlers;
  handlers.about = [] { return std::string("{\"name\":\"sh\",\"pid\":1}\n"); };
  admin::AdminServer server(std::move(handlers));
  auto bound = server.start_private(path);
  ASSERT_TRUE(bound) << bound.error();
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  AdminAddress where;
  where.unix_path = path;
  auto about = watch_view::exchange(where, "GET", "/about");
  ASSERT_TRUE(about) << about.error();
  EXPECT_EQ(about->body, "{\"name\":\"sh\",\"pid\":1}\n");

  if (::geteuid() != 0) {
    GTEST_SKIP() << "another user's connection needs root to make";
  }
  // Open the path to everyone, then connect as nobody: the peer check alone must refuse.
  ::chmod(folder.c_str(), 0755);
  ::chmod(path.c_str(), 0666);
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) {
      ::_exit(3);
    }
    auto reply = watch_view::exchange(where, "GET", "/about", {}, 2000);
    ::_exit(reply ? 1 : 0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "another user was answered on the private socket";
}

}  // namespace
}  // namespace sandgate::testing
