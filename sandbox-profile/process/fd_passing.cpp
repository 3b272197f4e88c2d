// Descriptor passing. See fd_passing.hpp.
#include "sandbox-profile/process/fd_passing.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

// macOS has neither flag: descriptors are marked close-on-exec with fcntl() there, and writes
// to a closed peer are harmless because `run` ignores SIGPIPE.
#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif
#ifndef MSG_CMSG_CLOEXEC
#define MSG_CMSG_CLOEXEC 0
#endif

namespace sandgate::sandbox {
namespace {

constexpr int kBacklog = 4096;  // as the daemon's own listener
constexpr std::size_t kMaxText = 64 * 1024;

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

void set_cloexec(int fd) { ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC); }

}  // namespace

Expected<bool, std::string> send_message(int socket, const std::string& text, int fd) {
  iovec data{const_cast<char*>(text.data()), text.size()};
  char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  if (fd >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &fd, sizeof(int));
  }
  ssize_t sent;
  do {
    sent = ::sendmsg(socket, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    return Unexpected{errno_text("sendmsg")};
  }
  return true;
}

Expected<Message, std::string> receive_message(int socket) {
  std::vector<char> buffer(kMaxText);
  iovec data{buffer.data(), buffer.size()};
  char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t received;
  do {
    received = ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
  } while (received < 0 && errno == EINTR);
  if (received < 0) {
    return Unexpected{errno_text("recvmsg")};
  }
  Message out;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS) {
      std::memcpy(&out.fd, CMSG_DATA(header), sizeof(int));
      set_cloexec(out.fd);
    }
  }
  out.closed = received == 0 && out.fd < 0;
  out.text.assign(buffer.data(), static_cast<std::size_t>(received));
  return out;
}

sockaddr_in loopback_address(std::uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  return address;
}

Expected<int, std::string> open_loopback_listener(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    return Unexpected{errno_text("socket")};
  }
  set_cloexec(fd);
  const sockaddr_in address = loopback_address(port);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const std::string error = errno_text(("bind 127.0.0.1:" + std::to_string(port)).c_str());
    ::close(fd);
    return Unexpected{error};
  }
  if (::listen(fd, kBacklog) != 0) {
    const std::string error = errno_text("listen");
    ::close(fd);
    return Unexpected{error};
  }
  return fd;
}

}  // namespace sandgate::sandbox
