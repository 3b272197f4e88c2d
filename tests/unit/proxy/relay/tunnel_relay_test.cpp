// The tunnel relay (proxy/relay/tunnel_relay.hpp) and its pipe pool, on real loopback sockets:
// a client A and an upstream B, each a plain blocking socket of the test, and the relay between
// the two sockets the gate would hold, run on an io_context of its own thread. What the gate's
// CONNECT tunnels and WebSocket connections rely on: every byte both ways, half-close, a reset
// passed on as a reset, the idle timeout, closing from outside, exact byte counts, and pipes of
// any size (several pipefuls per burst, many bursts).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstring>
#include <future>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "proxy/relay/pipe_pool.hpp"
#include "proxy/relay/tunnel_relay.hpp"

namespace sandgate::relay {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;

// A connected loopback pair: `ours` for the relay, `theirs` a blocking descriptor for the test.
struct Pair {
  tcp::socket ours;
  int theirs = -1;
};

Pair connected_pair(asio::io_context& io) {
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(acceptor.local_endpoint().port());
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  tcp::socket accepted = acceptor.accept();
  return {std::move(accepted), fd};
}

void send_all(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      return;
    }
    sent += static_cast<std::size_t>(n);
  }
}

// Reads until the end of the stream (or an error: `reset` says which), at most `timeout`.
std::string read_to_end(int fd, bool* reset = nullptr, std::chrono::seconds timeout = 10s) {
  timeval tv{static_cast<time_t>(timeout.count()), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string data;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      data.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (reset != nullptr) {
      *reset = n < 0 && errno == ECONNRESET;
    }
    return data;
  }
}

std::string random_bytes(std::size_t size, unsigned seed) {
  std::mt19937 random(seed);
  std::string data(size, '\0');
  for (char& c : data) {
    c = static_cast<char>(random());
  }
  return data;
}

// A relay between A and B on an io_context of its own thread.
class RelayFixture {
 public:
  explicit RelayFixture(std::chrono::seconds idle = 0s, std::size_t pipe_bytes = 64 * 1024)
      : pipes_({pipe_bytes, 64 * 1024 * 1024, 4 * 1024 * 1024}),
        client_(connected_pair(io_)),
        upstream_(connected_pair(io_)),
        relay_(client_.ours, upstream_.ours, pipes_, idle_sweep_, idle,
               [this](Result result) { done_.set_value(result); }) {}
  ~RelayFixture() {
    io_.stop();  // a relay that never ended (a failed test) must not hang the program
    if (thread_.joinable()) {
      thread_.join();
    }
    ::close(client_.theirs);
    if (upstream_.theirs >= 0) {
      ::close(upstream_.theirs);
    }
  }

  void start(std::function<void(TunnelRelay&)> before = {}) {
    if (before) {
      before(relay_);
    }
    relay_.start();
    thread_ = std::thread([this] { io_.run(); });
  }
  // The relay's result, once it has ended (or nothing after 15 s).
  std::optional<Result> result() {
    auto future = done_.get_future();
    if (future.wait_for(15s) != std::future_status::ready) {
      return std::nullopt;
    }
    return future.get();
  }
  // Closes the gate's sockets on the relay's thread, as the drain and a reload do.
  void close_from_outside() {
    asio::post(io_, [this] {
      boost::system::error_code ignored;
      client_.ours.close(ignored);
      upstream_.ours.close(ignored);
    });
  }
  // The upstream ends with a reset (linger 0, then close).
  void reset_b() {
    linger hard{1, 0};
    ::setsockopt(upstream_.theirs, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    ::close(upstream_.theirs);
    upstream_.theirs = -1;
  }
  int a() const { return client_.theirs; }
  int b() const { return upstream_.theirs; }
  const PipePool& pipes() const { return pipes_; }
  // Stops the idle sweep on the relay's thread, as the drain does, and says how long the relay's
  // loop then took to run out of work (nothing else keeps it).
  std::chrono::steady_clock::duration stop_sweep_and_time_the_loops_end() {
    const auto stopped = std::chrono::steady_clock::now();
    asio::post(io_, [this] { idle_sweep_.stop(); });
    thread_.join();
    return std::chrono::steady_clock::now() - stopped;
  }
  // Read once the result is in (the relay leaves the sweep before it reports its end).
  const IdleSweep& idle_sweep() const { return idle_sweep_; }

 private:
  asio::io_context io_{1};
  PipePool pipes_;
  IdleSweep idle_sweep_;
  Pair client_;
  Pair upstream_;
  std::promise<Result> done_;
  TunnelRelay relay_;
  std::thread thread_;
};

// Both directions at once, each ended by a half-close, with every byte in order and counted.
void exchange_both_ways(RelayFixture& f, std::size_t up_size, std::size_t down_size) {
  const std::string up = random_bytes(up_size, 1);
  const std::string down = random_bytes(down_size, 2);
  f.start();
  std::string at_b;
  std::string at_a;
  std::thread b_side([&] {
    send_all(f.b(), down);
    ::shutdown(f.b(), SHUT_WR);
    at_b = read_to_end(f.b());
  });
  std::thread a_reader([&] { at_a = read_to_end(f.a()); });
  send_all(f.a(), up);
  ::shutdown(f.a(), SHUT_WR);
  b_side.join();
  a_reader.join();
  EXPECT_TRUE(at_b == up) << "upstream got " << at_b.size() << " of " << up.size() << " bytes";
  EXPECT_TRUE(at_a == down) << "client got " << at_a.size() << " of " << down.size() << " bytes";
  const auto result = f.result();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->outcome, Outcome::closed);
  EXPECT_EQ(result->bytes_up, up.size());
  EXPECT_EQ(result->bytes_down, down.size());
}

TEST(TunnelRelay, MovesEveryByteBothWaysAndEndsOnBothHalfCloses) {
  RelayFixture f;
  exchange_both_ways(f, 8 * 1024 * 1024, 6 * 1024 * 1024);
}

// Pipes of one page: a burst is many pipefuls, and the stream many bursts.
TEST(TunnelRelay, SmallPipesMoveTheSameBytes) {
  RelayFixture f(0s, 4096);
  exchange_both_ways(f, 3 * 1024 * 1024 + 17, 1024 * 1024 + 5);
}

// Pipes as large as the system allows: one read may take more than a socket buffer holds.
TEST(TunnelRelay, LargestPipesMoveTheSameBytes) {
  RelayFixture f(0s, pipe_max_size());
  exchange_both_ways(f, 16 * 1024 * 1024 + 3, 9 * 1024 * 1024);
}

TEST(TunnelRelay, OneSidesEndLeavesTheOtherDirectionRunning) {
  RelayFixture f;
  f.start();
  ::shutdown(f.a(), SHUT_WR);         // the client is done sending, and waits for the answer
  EXPECT_EQ(read_to_end(f.b()), "");  // passed on as the end of the upstream's input
  const std::string answer = random_bytes(1024 * 1024, 3);
  std::thread writer([&] {
    send_all(f.b(), answer);
    ::shutdown(f.b(), SHUT_WR);
  });
  EXPECT_TRUE(read_to_end(f.a()) == answer);
  writer.join();
  const auto result = f.result();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->outcome, Outcome::closed);
  EXPECT_EQ(result->bytes_down, answer.size());
}

TEST(TunnelRelay, AResetIsPassedOnAsAReset) {
  RelayFixture f;
  f.start();
  send_all(f.a(), "hello");
  char buffer[5];
  ASSERT_EQ(::recv(f.b(), buffer, sizeof buffer, MSG_WAITALL), 5);
  f.reset_b();
  bool reset = false;
  read_to_end(f.a(), &reset);
  EXPECT_TRUE(reset);
  const auto result = f.result();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->outcome, Outcome::reset);
  EXPECT_EQ(result->bytes_up, 5u);
}

TEST(TunnelRelay, IdleTunnelEndsAfterTheIdleTimeout) {
  RelayFixture f(1s);
  const auto start = std::chrono::steady_clock::now();
  f.start();
  send_all(f.a(), "x");  // activity first: the timeout counts from the last byte
  char byte;
  ASSERT_EQ(::recv(f.b(), &byte, 1, 0), 1);
  bool reset = false;
  read_to_end(f.a(), &reset);
  EXPECT_TRUE(reset);
  const auto result = f.result();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->outcome, Outcome::idle_timeout);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1s);
}

// The idle timeout counts from the last byte, not from the start: a tunnel with a byte every
// 300 ms outlives several timeouts of 1 s, then ends about a second after its last byte. The
// worker's one sweep then watches nothing and its timer stops.
TEST(TunnelRelay, ActivityKeepsATunnelPastItsIdleTimeoutAndTheSweepLetsGoAtTheEnd) {
  RelayFixture f(1s);
  f.start();
  const auto start = std::chrono::steady_clock::now();
  char byte;
  auto last_byte = start;
  while (std::chrono::steady_clock::now() - start < 2500ms) {
    send_all(f.a(), "x");
    ASSERT_EQ(::recv(f.b(), &byte, 1, 0), 1) << "the tunnel ended while in use";
    last_byte = std::chrono::steady_clock::now();  // the relay moved it before this
    std::this_thread::sleep_for(300ms);
  }
  bool reset = false;
  read_to_end(f.a(), &reset);
  EXPECT_TRUE(reset);
  const auto result = f.result();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->outcome, Outcome::idle_timeout);
  const auto quiet = std::chrono::steady_clock::now() - last_byte;
  EXPECT_GE(quiet, 900ms);  // the timeout (1 s) from the last byte, less scheduling slack
  EXPECT_LE(quiet, 5s);
  EXPECT_EQ(f.idle_sweep().watched(), 0u);
  EXPECT_EQ(f.idle_sweep().period(), 125ms);  // an eighth of the shortest idle timeout
}

// The sweep's timer outlives the last tunnel (cancelling it at every tunnel's end would cost a
// system call each); at shutdown stop() cancels it, so the worker's loop ends at once instead of
// up to a period later.
TEST(TunnelRelay, AStoppedSweepDoesNotKeepTheLoopAlive) {
  RelayFixture f(600s);
  f.start();
  f.close_from_outside();
  const auto result = f.result();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->outcome, Outcome::aborted);
  EXPECT_EQ(f.idle_sweep().period(), 1000ms);
  EXPECT_LT(f.stop_sweep_and_time_the_loops_end(), 500ms);
}

TEST(TunnelRelay, WithoutAnIdleTimeoutNothingIsWatched) {
  RelayFixture f;
  f.start();
  send_all(f.a(), "abc");
  char buffer[3];
  ASSERT_EQ(::recv(f.b(), buffer, sizeof buffer, MSG_WAITALL), 3);
  ::shutdown(f.a(), SHUT_WR);
  ::shutdown(f.b(), SHUT_WR);
  const auto result = f.result();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->outcome, Outcome::closed);
  EXPECT_EQ(f.idle_sweep().watched(), 0u);
  // Never watched: watching would have set the period to an eighth of the timeout.
  EXPECT_EQ(f.idle_sweep().period(), 1000ms);
}

TEST(TunnelRelay, ClosedFromOutsideEndsAborted) {
  RelayFixture f;
  f.start();
  send_all(f.a(), "abc");
  char buffer[3];
  ASSERT_EQ(::recv(f.b(), buffer, sizeof buffer, MSG_WAITALL), 3);
  f.close_from_outside();
  const auto result = f.result();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->outcome, Outcome::aborted);
  EXPECT_EQ(result->bytes_up, 3u);
}

TEST(TunnelRelay, RefusedFirstBytesReachNobody) {
  RelayFixture f;
  f.start([](TunnelRelay& relay) {
    relay.watch_first_bytes([](std::string_view bytes, bool) {
      return FirstBytesLook{bytes.starts_with("SSH-") ? FirstBytesVerdict::refuse
                                                      : FirstBytesVerdict::pass};
    });
  });
  send_all(f.a(), "SSH-2.0-client\r\n");
  bool reset = false;
  EXPECT_EQ(read_to_end(f.b(), &reset), "");
  const auto result = f.result();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->outcome, Outcome::refused);
  EXPECT_EQ(result->bytes_up, 0u);
}

// First bytes that come one at a time are judged together: the check sees each byte once, holds
// back a prefix of what it looks for (watch, hold) until more arrive, and refused bytes reach
// nobody, however they were split.
TEST(TunnelRelay, FirstBytesSplitAcrossSendsAreJudgedTogether) {
  RelayFixture f;
  std::vector<std::string> seen;
  std::string so_far;
  f.start([&seen, &so_far](TunnelRelay& relay) {
    relay.watch_first_bytes([&seen, &so_far](std::string_view bytes, bool end) {
      so_far += bytes;
      seen.push_back(so_far);
      const std::size_t n = std::min<std::size_t>(so_far.size(), 4);
      if (std::string_view(so_far).substr(0, n) != std::string_view("SSH-").substr(0, n)) {
        return FirstBytesLook{FirstBytesVerdict::pass};
      }
      if (n < 4 && !end) {
        return FirstBytesLook{FirstBytesVerdict::watch, so_far.size()};
      }
      return FirstBytesLook{FirstBytesVerdict::refuse};
    });
  });
  send_all(f.a(), "S");
  std::this_thread::sleep_for(100ms);
  send_all(f.a(), "SH-2.0-client\r\n");
  bool reset = false;
  EXPECT_EQ(read_to_end(f.b(), &reset), "");
  const auto result = f.result();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->outcome, Outcome::refused);
  EXPECT_EQ(result->bytes_up, 0u);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front(), "S");
  EXPECT_TRUE(seen.back().starts_with("SSH-")) << seen.back();
}

// A client that sends a few bytes and its end at once: the check sees the end, and once
// passed they are relayed, counted, and followed by the half-close.
TEST(TunnelRelay, PassedFirstBytesWithTheClientsEndAreRelayedThenHalfClosed) {
  RelayFixture f;
  bool saw_final = false;
  f.start([&saw_final](TunnelRelay& relay) {
    relay.watch_first_bytes(
        [&saw_final, held = std::size_t{0}](std::string_view bytes, bool end) mutable {
          saw_final = end;
          held += bytes.size();
          return end ? FirstBytesLook{FirstBytesVerdict::pass}
                     : FirstBytesLook{FirstBytesVerdict::watch, held};
        });
  });
  send_all(f.a(), "hey");
  ::shutdown(f.a(), SHUT_WR);
  EXPECT_EQ(read_to_end(f.b()), "hey");  // the bytes, then the end of the stream
  send_all(f.b(), "bye");
  ::shutdown(f.b(), SHUT_WR);
  EXPECT_EQ(read_to_end(f.a()), "bye");
  const auto result = f.result();
  ASSERT_TRUE(result);
  EXPECT_TRUE(saw_final);
  EXPECT_EQ(result->outcome, Outcome::closed);
  EXPECT_EQ(result->bytes_up, 3u);
  EXPECT_EQ(result->bytes_down, 3u);
}

TEST(TunnelRelay, OutcomesHaveTheirEndLineNames) {
  EXPECT_STREQ(to_string(Outcome::closed), "closed");
  EXPECT_STREQ(to_string(Outcome::reset), "reset");
  EXPECT_STREQ(to_string(Outcome::idle_timeout), "idle-timeout");
  EXPECT_STREQ(to_string(Outcome::aborted), "aborted");
  EXPECT_STREQ(to_string(Outcome::refused), "refused");
  EXPECT_STREQ(to_string(Outcome::internal_error), "error");
}

// ---- the pipe pool ----

TEST(PipePool, PipesGetTheAskedCapacityClampedToTheSystemMaximum) {
  PipePool pool({256 * 1024, 64 * 1024 * 1024, 4 * 1024 * 1024});
  PipePool::Pipe pipe = pool.acquire();
  ASSERT_GE(pipe.read_fd, 0);
  // Root, or a user within its pipe quota, gets the size; the kernel may round it up.
  EXPECT_GE(pipe.capacity, std::min<std::size_t>(256 * 1024, pipe_max_size()));
  EXPECT_EQ(pool.held_bytes(), pipe.capacity);
  pool.release(pipe);

  PipePool huge({std::size_t{1} << 40, 0, 0});
  EXPECT_EQ(huge.pipe_bytes(), pipe_max_size());
  PipePool tiny({1, 0, 0});
  EXPECT_EQ(tiny.pipe_bytes(), 4096u);
}

TEST(PipePool, PastItsHoldBudgetNewPipesKeepTheDefaultSize) {
  // Room for two large pipes; the third and fourth stay at the kernel's default.
  PipePool pool({1024 * 1024, 2 * 1024 * 1024 + 128 * 1024, 4 * 1024 * 1024});
  if (pool.pipe_bytes() < 1024 * 1024) {
    GTEST_SKIP() << "pipe-max-size is below 1 MiB here";
  }
  std::vector<PipePool::Pipe> pipes;
  for (int i = 0; i < 4; ++i) {
    pipes.push_back(pool.acquire());
    ASSERT_GE(pipes.back().read_fd, 0);
  }
  EXPECT_EQ(pipes[1].capacity, 1024u * 1024);
  EXPECT_EQ(pipes[2].capacity, 64u * 1024);
  EXPECT_EQ(pipes[3].capacity, 64u * 1024);
  // Discarding a large one makes room for a large one again.
  pool.discard(pipes[0]);
  pipes[0] = pool.acquire();
  EXPECT_EQ(pipes[0].capacity, 1024u * 1024);
  for (const auto& pipe : pipes) {
    pool.discard(pipe);
  }
  EXPECT_EQ(pool.held_bytes(), 0u);
}

TEST(PipePool, KeepsAtMostItsBudgetOfEmptyPipes) {
  PipePool pool({64 * 1024, 64 * 1024 * 1024, 256 * 1024});  // four default pipes' worth
  std::vector<PipePool::Pipe> pipes;
  for (int i = 0; i < 10; ++i) {
    pipes.push_back(pool.acquire());
    ASSERT_GE(pipes.back().read_fd, 0);
  }
  for (const auto& pipe : pipes) {
    pool.release(pipe);
  }
  EXPECT_EQ(pool.kept(), 4u);
  EXPECT_EQ(pool.held_bytes(), 4u * 64 * 1024);  // the others were closed
  // A kept pipe is lent again, not a new one made.
  const PipePool::Pipe again = pool.acquire();
  EXPECT_EQ(again.read_fd, pipes[3].read_fd);
  pool.release(again);

  PipePool one({1024 * 1024, 64 * 1024 * 1024, 1});  // a budget below one pipe keeps one
  one.release(one.acquire());
  one.release(one.acquire());
  EXPECT_EQ(one.kept(), 1u);
}

}  // namespace
}  // namespace sandgate::relay
