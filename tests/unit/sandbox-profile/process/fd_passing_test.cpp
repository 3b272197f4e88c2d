// Passing the listening socket from the confined child to the gate.
#include "sandbox-profile/process/fd_passing.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace sandgate::sandbox {
namespace {

TEST(FdPassing, TheListenerArrivesWithItsTextAndStillAccepts) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
  auto listener = open_loopback_listener();
  ASSERT_TRUE(listener) << listener.error();
  ASSERT_TRUE(send_message(pair[1], "ready\nlandlock 7 3\n", *listener));
  ::close(*listener);

  auto message = receive_message(pair[0]);
  ASSERT_TRUE(message) << message.error();
  EXPECT_EQ(message->text, "ready\nlandlock 7 3\n");
  ASSERT_GE(message->fd, 0);
  EXPECT_EQ(::fcntl(message->fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);

  sockaddr_in address{};
  socklen_t length = sizeof address;
  ASSERT_EQ(::getsockname(message->fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  EXPECT_EQ(ntohl(address.sin_addr.s_addr), INADDR_LOOPBACK);
  EXPECT_NE(address.sin_port, 0);
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const int accepted = ::accept(message->fd, nullptr, nullptr);
  EXPECT_GE(accepted, 0);
  for (int fd : {client, accepted, message->fd, pair[1]}) {
    ::close(fd);
  }
  // The other end closed: a message that says so.
  auto closed = receive_message(pair[0]);
  ASSERT_TRUE(closed);
  EXPECT_TRUE(closed->closed);
  ::close(pair[0]);
}

TEST(FdPassing, TextWithoutDescriptor) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
  ASSERT_TRUE(send_message(pair[0], "go"));
  auto message = receive_message(pair[1]);
  ASSERT_TRUE(message);
  EXPECT_EQ(message->text, "go");
  EXPECT_EQ(message->fd, -1);
  EXPECT_FALSE(message->closed);
  ::close(pair[0]);
  ::close(pair[1]);
}

}  // namespace
}  // namespace sandgate::sandbox
