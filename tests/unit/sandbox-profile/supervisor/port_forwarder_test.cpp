// The forwarded localhost ports of `run` (--allow-localhost-port): real sockets on loopback, the
// contract of the gate's own relay: bytes unchanged, an end passed on as a half-close, a reset
// passed on as a reset, nothing listening answered with a reset, bounded buffering, one thread
// for every connection, and nothing one connection (or the command's connector) does holds the
// others. Inbound ports go through a connector inside the namespace; here the test plays it over
// the same channel (and tests/e2e/run_test.cpp runs the real one).
#include "sandbox-profile/supervisor/port_forwarder.hpp"

#include "sandbox-profile/process/fd_passing.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/eventually.hpp"

namespace sandgate::sandbox {
namespace {

using testing::eventually;

using namespace std::chrono_literals;

struct Listening {
  int fd = -1;
  std::uint16_t port = 0;
};

Listening listen_loopback() {
  Listening out;
  out.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(out.fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(out.fd, 512) != 0) {
    ADD_FAILURE() << "cannot listen on loopback";
    return out;
  }
  socklen_t length = sizeof address;
  ::getsockname(out.fd, reinterpret_cast<sockaddr*>(&address), &length);
  out.port = ntohs(address.sin_port);
  return out;
}

// A blocking socket connected to 127.0.0.1:port, whose reads give up after 10 s.
int connect_to(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const timeval ten{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &ten, sizeof ten);
  return fd;
}

int accept_one(int listener) {
  const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  const timeval ten{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &ten, sizeof ten);
  return fd;
}

void reset_close(int fd) {
  const linger abort{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
  ::close(fd);
}

// Reads until the end of the stream; the errno of a failed read in `error` (0 after a clean end).
std::string read_to_end(int fd, int& error) {
  std::string out;
  char buffer[65536];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      out.append(buffer, static_cast<std::size_t>(got));
      continue;
    }
    error = got == 0 ? 0 : errno;
    return out;
  }
}

bool write_all(int fd, const std::string& bytes) {
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t sent = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (sent <= 0) {
      return false;
    }
    done += static_cast<std::size_t>(sent);
  }
  return true;
}

std::size_t thread_count() {
  std::size_t count = 0;
  DIR* tasks = ::opendir("/proc/self/task");
  while (dirent* entry = ::readdir(tasks)) {
    count += entry->d_name[0] != '.';
  }
  ::closedir(tasks);
  return count;
}

// The forwarder in front of an origin: connections to `inside.port` reach `origin`.
struct Forwarded {
  Listening origin = listen_loopback();
  Listening inside = listen_loopback();
  PortForwarder forwarder;

  Forwarded() { forwarder.forward_outbound(inside.fd, origin.port); }
  ~Forwarded() {
    forwarder.stop();
    ::close(origin.fd);
  }
};

TEST(PortForwarder, BytesPassUnchangedAndAnEndIsAHalfClose) {
  Forwarded f;
  const int client = connect_to(f.inside.port);
  const int server = accept_one(f.origin.fd);
  ASSERT_GE(server, 0);

  // 4 MiB up (far more than the forwarder's buffers), then the client's end.
  std::string upload(4 << 20, '\0');
  for (std::size_t i = 0; i < upload.size(); ++i) {
    upload[i] = static_cast<char>(i * 131 + i / 4096);
  }
  std::thread sender([&] {
    EXPECT_TRUE(write_all(client, upload));
    ::shutdown(client, SHUT_WR);
  });
  int error = -1;
  const std::string received = read_to_end(server, error);
  sender.join();
  EXPECT_EQ(error, 0) << std::strerror(error);
  EXPECT_TRUE(received == upload) << "received " << received.size() << " bytes, not the same";

  // The other direction still works after the client's half-close, and ends cleanly.
  ASSERT_TRUE(write_all(server, "the answer"));
  ::close(server);
  EXPECT_EQ(read_to_end(client, error), "the answer");
  EXPECT_EQ(error, 0) << std::strerror(error);
  ::close(client);
  EXPECT_TRUE(eventually([&] { return f.forwarder.open_connections() == 0; }));
}

TEST(PortForwarder, AResetIsPassedOnAsAResetBothWays) {
  Forwarded f;
  {
    const int client = connect_to(f.inside.port);
    const int server = accept_one(f.origin.fd);
    ASSERT_TRUE(write_all(server, "partial"));
    reset_close(server);
    int error = 0;
    read_to_end(client, error);
    EXPECT_EQ(error, ECONNRESET) << "the origin's reset reached the client as: "
                                 << (error == 0 ? "a clean end" : std::strerror(error));
    ::close(client);
  }
  {
    const int client = connect_to(f.inside.port);
    const int server = accept_one(f.origin.fd);
    ASSERT_TRUE(write_all(client, "partial"));
    std::this_thread::sleep_for(50ms);
    reset_close(client);
    int error = 0;
    read_to_end(server, error);
    EXPECT_EQ(error, ECONNRESET) << "the client's reset reached the origin as: "
                                 << (error == 0 ? "a clean end" : std::strerror(error));
    ::close(server);
  }
}

TEST(PortForwarder, NothingListeningThereResetsTheClient) {
  Listening nobody = listen_loopback();
  const std::uint16_t closed_port = nobody.port;
  ::close(nobody.fd);
  Listening inside = listen_loopback();
  PortForwarder forwarder;
  forwarder.forward_outbound(inside.fd, closed_port);
  const int client = connect_to(inside.port);
  int error = 0;
  read_to_end(client, error);
  EXPECT_EQ(error, ECONNRESET) << (error == 0 ? "a clean end" : std::strerror(error));
  ::close(client);
}

TEST(PortForwarder, AnOriginThatDoesNotReadStopsTheClientInsteadOfGrowingABuffer) {
  Forwarded f;
  const int client = connect_to(f.inside.port);
  const int server = accept_one(f.origin.fd);
  ASSERT_GE(server, 0);
  ::fcntl(client, F_SETFL, ::fcntl(client, F_GETFL) | O_NONBLOCK);
  const std::string chunk(65536, 'x');
  std::size_t written = 0;
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  bool blocked = false;
  while (std::chrono::steady_clock::now() < deadline && !blocked) {
    const ssize_t sent = ::send(client, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    if (sent > 0) {
      written += static_cast<std::size_t>(sent);
    } else if (errno == EAGAIN) {
      // Full: wait a moment in case the forwarder is still draining, then try once more.
      std::this_thread::sleep_for(200ms);
      blocked = ::send(client, chunk.data(), chunk.size(), MSG_NOSIGNAL) < 0 && errno == EAGAIN;
    }
  }
  EXPECT_TRUE(blocked) << written << " bytes taken without the origin reading";
  // What is held is the kernel's socket buffers and the forwarder's 64 KiB, not the upload.
  EXPECT_LT(written, 64u << 20);
  ::close(client);
  ::close(server);
}

TEST(PortForwarder, OneThreadServesEveryConnection) {
  Forwarded f;
  // The forwarder's thread exists once a port is forwarded.
  const std::size_t threads = thread_count();
  std::vector<int> clients;
  std::vector<int> servers;
  for (int i = 0; i < 200; ++i) {
    clients.push_back(connect_to(f.inside.port));
    servers.push_back(accept_one(f.origin.fd));
  }
  EXPECT_TRUE(eventually([&] { return f.forwarder.open_connections() == 200; }))
      << f.forwarder.open_connections();
  EXPECT_EQ(thread_count(), threads);
  // Every connection carries its own bytes.
  for (int i = 0; i < 200; ++i) {
    const std::string text = "connection " + std::to_string(i);
    ASSERT_TRUE(write_all(clients[i], text));
    char buffer[64];
    const ssize_t got = ::read(servers[i], buffer, sizeof buffer);
    ASSERT_GT(got, 0);
    EXPECT_EQ(std::string(buffer, static_cast<std::size_t>(got)), text);
  }
  for (int fd : clients) {
    ::close(fd);
  }
  for (int fd : servers) {
    ::close(fd);
  }
  EXPECT_TRUE(eventually([&] { return f.forwarder.open_connections() == 0; }))
      << f.forwarder.open_connections();
}

TEST(PortForwarder, StopCutsWhatIsOpenWithAReset) {
  Forwarded f;
  const int client = connect_to(f.inside.port);
  const int server = accept_one(f.origin.fd);
  ASSERT_TRUE(write_all(client, "hello"));
  char buffer[8];
  ASSERT_EQ(::read(server, buffer, sizeof buffer), 5);
  f.forwarder.stop();
  int error = 0;
  read_to_end(client, error);
  EXPECT_EQ(error, ECONNRESET);
  read_to_end(server, error);
  EXPECT_EQ(error, ECONNRESET);
  ::close(client);
  ::close(server);
  f.forwarder.stop();  // idempotent
}

// A host service whose accept queue is full drops the SYN: the connect to it waits (for the
// connect timeout, then the client is reset) without holding any other connection.
TEST(PortForwarder, AConnectThatHangsHoldsNoOtherConnection) {
  Listening full = listen_loopback();
  ASSERT_EQ(::listen(full.fd, 0), 0);  // a queue of one, never accepted
  std::vector<int> fillers;
  for (int i = 0; i < 3; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(full.port);
    ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    fillers.push_back(fd);
  }
  Listening origin = listen_loopback();
  Listening inside_full = listen_loopback();
  Listening inside_origin = listen_loopback();
  PortForwarder forwarder(4s);  // far longer than a loopback round trip, even under a sanitizer
  forwarder.forward_outbound(inside_full.fd, full.port);
  forwarder.forward_outbound(inside_origin.fd, origin.port);

  std::vector<int> stuck;
  for (int i = 0; i < 3; ++i) {
    stuck.push_back(connect_to(inside_full.port));
  }
  const auto started = std::chrono::steady_clock::now();
  const int client = connect_to(inside_origin.port);
  const int server = accept_one(origin.fd);
  ASSERT_GE(server, 0);
  ASSERT_TRUE(write_all(client, "ping"));
  char buffer[8];
  ASSERT_EQ(::read(server, buffer, sizeof buffer), 4);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s) << "held by the hanging connects";

  // The hanging ones are reset once the connect timeout has passed.
  for (int fd : stuck) {
    int error = 0;
    read_to_end(fd, error);
    EXPECT_EQ(error, ECONNRESET) << (error == 0 ? "a clean end" : std::strerror(error));
    ::close(fd);
  }
  for (int fd : fillers) {
    ::close(fd);
  }
  for (int fd : {client, server, full.fd, origin.fd}) {
    ::close(fd);
  }
}

// Inbound: the forwarder asks the connector inside for a socket and waits for its answer
// without blocking. Here the test is the connector: it answers the first request with a socket
// to the origin, and never answers the second (a connector the command stopped): that client is
// reset after the timeout, and an outbound connection meanwhile is served at once.
TEST(PortForwarder, InboundWaitsForTheConnectorWithoutHoldingAnyone) {
  int channel[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel), 0);
  Listening free_port = listen_loopback();  // the inbound port: free it for the forwarder
  const std::uint16_t inbound = free_port.port;
  ::close(free_port.fd);
  // The command's server "inside" listens on the same port number, on 127.0.0.2 (here inside
  // and outside are one namespace, and the forwarder holds 127.0.0.1:inbound).
  Listening origin;
  origin.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  origin.port = inbound;
  sockaddr_in second_loopback{};
  second_loopback.sin_family = AF_INET;
  second_loopback.sin_addr.s_addr = htonl(0x7f000002);
  second_loopback.sin_port = htons(inbound);
  ASSERT_EQ(
      ::bind(origin.fd, reinterpret_cast<sockaddr*>(&second_loopback), sizeof second_loopback), 0);
  ASSERT_EQ(::listen(origin.fd, 16), 0);
  Listening echo = listen_loopback();
  Listening inside_echo = listen_loopback();
  PortForwarder forwarder(4s);  // far longer than a loopback round trip, even under a sanitizer
  ASSERT_TRUE(forwarder.forward_inbound(inbound, channel[0]));
  forwarder.forward_outbound(inside_echo.fd, echo.port);

  // 1. Answered: relayed to the socket the connector made.
  const int first = connect_to(inbound);
  auto request = receive_message(channel[1]);
  ASSERT_TRUE(request) << request.error();
  EXPECT_EQ(request->text.substr(request->text.find(' ') + 1), std::to_string(inbound));
  const int made = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::connect(made, reinterpret_cast<sockaddr*>(&second_loopback), sizeof second_loopback),
            0);
  ASSERT_TRUE(
      send_message(channel[1], "ok " + request->text.substr(0, request->text.find(' ')), made));
  ::close(made);
  const int server = accept_one(origin.fd);
  ASSERT_TRUE(write_all(first, "inbound"));
  char buffer[16];
  ASSERT_EQ(::read(server, buffer, sizeof buffer), 7);

  // 2. Never answered: the outbound side is not held, and the client is reset in time.
  const int second = connect_to(inbound);
  ASSERT_TRUE(receive_message(channel[1]));  // asked, and left unanswered
  const auto started = std::chrono::steady_clock::now();
  const int client = connect_to(inside_echo.port);
  const int echo_server = accept_one(echo.fd);
  ASSERT_TRUE(write_all(client, "ping"));
  ASSERT_EQ(::read(echo_server, buffer, sizeof buffer), 4);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s) << "held by the silent connector";
  int error = 0;
  read_to_end(second, error);
  EXPECT_EQ(error, ECONNRESET) << (error == 0 ? "a clean end" : std::strerror(error));
  for (int fd : {first, second, server, client, echo_server, channel[1], origin.fd, echo.fd}) {
    ::close(fd);
  }
}

// A client that half-closes and then resets: the reset reaches a silent origin at once, not at
// its next write.
TEST(PortForwarder, AResetAfterAHalfCloseIsPassedOnAtOnce) {
  Forwarded f;
  const int client = connect_to(f.inside.port);
  const int server = accept_one(f.origin.fd);
  ASSERT_TRUE(write_all(client, "request"));
  ::shutdown(client, SHUT_WR);
  char buffer[16];
  ASSERT_EQ(::read(server, buffer, sizeof buffer), 7);
  ASSERT_EQ(::read(server, buffer, sizeof buffer), 0);  // the half-close
  std::this_thread::sleep_for(100ms);
  reset_close(client);
  const auto started = std::chrono::steady_clock::now();
  // Only an error or a hang-up wakes this: the end of stream already arrived.
  pollfd ready{server, 0, 0};
  ASSERT_EQ(::poll(&ready, 1, 5000), 1) << "the reset did not arrive";
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  EXPECT_NE(ready.revents & POLLERR, 0);
  int error = 0;
  socklen_t length = sizeof error;
  ASSERT_EQ(::getsockopt(server, SOL_SOCKET, SO_ERROR, &error, &length), 0);
  // (A reset on a socket that had the end of stream is EPIPE: the kernel's word for a reset in
  // CLOSE_WAIT.)
  EXPECT_TRUE(error == ECONNRESET || error == EPIPE) << std::strerror(error);
  EXPECT_TRUE(eventually([&] { return f.forwarder.open_connections() == 0; }));
  ::close(server);
}

// A client that half-closes and then reads slowly (an HTTP/1.0 client, `nc -N`): the origin's
// long answer and its end arrive whole, though the origin's end comes while the forwarder still
// holds a full buffer of what it sent.
TEST(PortForwarder, AfterAHalfCloseASlowReaderGetsEverything) {
  Forwarded f;
  const int client = connect_to(f.inside.port);
  const int server = accept_one(f.origin.fd);
  ASSERT_TRUE(write_all(client, "request"));
  ::shutdown(client, SHUT_WR);
  int error = -1;
  EXPECT_EQ(read_to_end(server, error), "request");
  std::string answer(4 << 20, '\0');
  for (std::size_t i = 0; i < answer.size(); ++i) {
    answer[i] = static_cast<char>(i * 7 + i / 65536);
  }
  std::thread origin([&] {
    EXPECT_TRUE(write_all(server, answer));
    ::close(server);
  });
  std::string received;
  char buffer[16384];
  for (;;) {
    const ssize_t got = ::read(client, buffer, sizeof buffer);
    if (got <= 0) {
      error = got == 0 ? 0 : errno;
      break;
    }
    received.append(buffer, static_cast<std::size_t>(got));
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  origin.join();
  EXPECT_EQ(error, 0) << std::strerror(error) << " after " << received.size() << " bytes";
  EXPECT_TRUE(received == answer) << "received " << received.size() << " bytes, not the same";
  ::close(client);
}

// The connector's answer must be a TCP socket connected to the port asked for inside: a unix
// socket, or a socket to another port, is refused and the client reset.
TEST(PortForwarder, AConnectorAnswerThatIsNotTheAskedPortIsRefused) {
  int channel[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel), 0);
  Listening other = listen_loopback();
  Listening free_port = listen_loopback();
  const std::uint16_t inbound = free_port.port;
  ::close(free_port.fd);
  PortForwarder forwarder(4s);
  ASSERT_TRUE(forwarder.forward_inbound(inbound, channel[0]));
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int client = connect_to(inbound);
    auto request = receive_message(channel[1]);
    ASSERT_TRUE(request) << request.error();
    const std::string id = request->text.substr(0, request->text.find(' '));
    int forged = -1;
    int pair[2] = {-1, -1};
    if (attempt == 0) {
      ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
      forged = pair[0];
    } else {
      forged = connect_to(other.port);  // a real TCP socket, to another port
    }
    ASSERT_TRUE(send_message(channel[1], "ok " + id, forged));
    int error = 0;
    read_to_end(client, error);
    EXPECT_EQ(error, ECONNRESET) << "answer " << attempt << ": "
                                 << (error == 0 ? "a clean end" : std::strerror(error));
    for (int fd : {client, forged, pair[1]}) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
  }
  ::close(channel[1]);
  ::close(other.fd);
}

}  // namespace
}  // namespace sandgate::sandbox
