// Every descriptor the gate opens is closed across exec (proxy/asio/close_on_exec.hpp): the gate
// runs programs (a masked secret's command, nft, `sandgate run`'s command), and a socket one of
// them inherited would hold a client's connection, an origin's or the listening port open behind
// the gate's back. With a client's tunnel open through the gate to an origin (the accepted socket
// and the dialled one) and a connection open to the admin endpoint, a program started now must
// see no socket. The test's own sockets are made close-on-exec, so that any socket the program
// sees is the gate's.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/shell_command.hpp"

namespace sandgate::testing {
namespace {

using namespace std::chrono_literals;

// A close-on-exec TCP socket connected to 127.0.0.1:port; -1 when it could not connect.
int dial(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A close-on-exec listening socket on 127.0.0.1, and its port.
int listen_on_loopback(std::uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 8) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    return -1;
  }
  port = ntohs(address.sin_port);
  return fd;
}

// What came on `fd` within 5 s, up to the end of an HTTP head.
std::string read_head(int fd) {
  timeval limit{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  std::string got;
  char buffer[1024];
  while (got.find("\r\n\r\n") == std::string::npos) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) {
      break;
    }
    got.append(buffer, static_cast<std::size_t>(n));
  }
  return got;
}

TEST(CloseOnExecTest, AProgramStartedWhileTheGateServesInheritsNoSocket) {
  std::uint16_t origin_port = 0;
  const int origin = listen_on_loopback(origin_port);
  ASSERT_GE(origin, 0);
  TestProxy proxy("", [](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.admin = settings::TcpEndpoint{"127.0.0.1", 0};
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});

  // A tunnel through the gate: the socket it accepted, and the one it dialled.
  const int client = dial(proxy.port());
  ASSERT_GE(client, 0);
  const std::string connect = "CONNECT origin.test:" + std::to_string(origin_port) +
                              " HTTP/1.1\r\nHost: origin.test:" + std::to_string(origin_port) +
                              "\r\n\r\n";
  ASSERT_EQ(::send(client, connect.data(), connect.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(connect.size()));
  const std::string answer = read_head(client);
  ASSERT_NE(answer.find(" 200"), std::string::npos) << answer;
  const int dialled = ::accept4(origin, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(dialled, 0);

  // A connection the admin endpoint accepted (held open: its request is not sent yet).
  const std::string admin = proxy.gate().admin_address();
  const int admin_client =
      dial(static_cast<std::uint16_t>(std::stoi(admin.substr(admin.rfind(':') + 1))));
  ASSERT_GE(admin_client, 0);
  std::this_thread::sleep_for(100ms);  // (the admin's accept runs on its own thread)

  const CommandResult listing = run_shell("ls -l /proc/self/fd");
  EXPECT_EQ(listing.output.find("socket:"), std::string::npos)
      << "a program the gate starts inherits these sockets:\n"
      << listing.output;

  ::close(admin_client);
  ::close(dialled);
  ::close(client);
  ::close(origin);
}

}  // namespace
}  // namespace sandgate::testing
