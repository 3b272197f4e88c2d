// sandgate-connect's relay on real descriptors: pipes for stdin/stdout and a loopback TCP
// connection for the tunnel. Early bytes first, half-close each way, and a reset reported.
#include "connect-proxy/relay.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <string>

namespace sandgate::connect_proxy {
namespace {

// A connected loopback TCP pair: `near` goes to the relay (non-blocking), `far` plays the proxy.
struct TcpPair {
  int near = -1;
  int far = -1;
  TcpPair() {
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    ::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::listen(listener, 1);
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
    near = ::socket(AF_INET, SOCK_STREAM, 0);
    ::connect(near, reinterpret_cast<sockaddr*>(&address), sizeof address);
    far = ::accept(listener, nullptr, nullptr);
    ::close(listener);
    ::fcntl(near, F_SETFL, ::fcntl(near, F_GETFL) | O_NONBLOCK);
  }
  ~TcpPair() {
    ::close(near);
    if (far >= 0) {
      ::close(far);
    }
  }
};

struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    read_end = fds[0];
    write_end = fds[1];
  }
};

// Reads from `fd` until EOF (or 5 s without data).
std::string read_all(int fd) {
  std::string out;
  char buffer[4096];
  for (;;) {
    pollfd entry{fd, POLLIN, 0};
    if (::poll(&entry, 1, 5000) <= 0) {
      out += "<timeout>";
      return out;
    }
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got <= 0) {
      return out;
    }
    out.append(buffer, static_cast<std::size_t>(got));
  }
}

void write_all(int fd, const std::string& data) {
  ASSERT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
}

TEST(Relay, EarlyBytesFirstThenBothHalfCloses) {
  TcpPair tcp;
  Pipe in;
  Pipe out;
  auto done = std::async(std::launch::async, [&] {
    return relay(in.read_end, out.write_end, tcp.near, "SSH-2.0-Fake\r\n");
  });

  // The server talks, then half-closes: stdout gets the early bytes, its bytes, then EOF.
  write_all(tcp.far, "more");
  ::shutdown(tcp.far, SHUT_WR);
  EXPECT_EQ(read_all(out.read_end), "SSH-2.0-Fake\r\nmore");

  // stdin still flows after the server's half-close, and its EOF reaches the server.
  write_all(in.write_end, "late data");
  ::close(in.write_end);
  EXPECT_EQ(read_all(tcp.far), "late data");

  const auto result = done.get();
  EXPECT_FALSE(result.error) << *result.error;
  EXPECT_EQ(result.bytes_up, 9u);
  EXPECT_EQ(result.bytes_down, 18u);
  ::close(in.read_end);
  ::close(out.read_end);
}

TEST(Relay, ClientHalfCloseFirstKeepsReading) {
  TcpPair tcp;
  Pipe in;
  Pipe out;
  auto done = std::async(std::launch::async,
                         [&] { return relay(in.read_end, out.write_end, tcp.near, ""); });

  write_all(in.write_end, "request");
  ::close(in.write_end);
  EXPECT_EQ(read_all(tcp.far), "request");  // EOF arrived: the relay shut down its send side

  // A large answer after the half-close, bigger than any pipe or socket buffer.
  const std::string answer(3 * 1024 * 1024, 'x');
  auto writer = std::async(std::launch::async, [&] {
    write_all(tcp.far, answer);
    ::shutdown(tcp.far, SHUT_WR);
  });
  EXPECT_EQ(read_all(out.read_end).size(), answer.size());
  writer.get();
  const auto result = done.get();
  EXPECT_FALSE(result.error) << *result.error;
  ::close(in.read_end);
  ::close(out.read_end);
}

TEST(Relay, ResetIsAnError) {
  TcpPair tcp;
  Pipe in;
  Pipe out;
  auto done = std::async(std::launch::async,
                         [&] { return relay(in.read_end, out.write_end, tcp.near, ""); });
  linger abort_close{1, 0};
  ::setsockopt(tcp.far, SOL_SOCKET, SO_LINGER, &abort_close, sizeof abort_close);
  ::close(tcp.far);
  tcp.far = -1;

  EXPECT_EQ(read_all(out.read_end), "");  // stdout closed
  const auto result = done.get();         // returns without stdin's EOF
  ASSERT_TRUE(result.error);
  EXPECT_NE(result.error->find("reset"), std::string::npos) << *result.error;
  ::close(in.write_end);
  ::close(in.read_end);
  ::close(out.read_end);
}

}  // namespace
}  // namespace sandgate::connect_proxy
