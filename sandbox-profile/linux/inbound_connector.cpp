// The connector inside the namespace. See inbound_connector.hpp.
#include "sandbox-profile/linux/inbound_connector.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <string>

#include "sandbox-profile/process/fd_passing.hpp"

namespace sandgate::sandbox {
namespace {

// The connector's blocking connect, inside the namespace (its own process: it waits alone).
int connect_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return -1;
  }
  const sockaddr_in address = loopback_address(port);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

bool split_word_number(std::string_view text, std::string_view& word, std::uint64_t& number) {
  const auto space = text.find(' ');
  if (space == std::string_view::npos) {
    return false;
  }
  word = text.substr(0, space);
  const std::string_view digits = text.substr(space + 1);
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  return error == std::errc() && end == digits.data() + digits.size();
}

[[noreturn]] void run_connector(int channel) {
  for (;;) {
    auto request = receive_message(channel);
    if (!request || request->closed) {
      ::_exit(0);
    }
    if (request->fd >= 0) {
      ::close(request->fd);
    }
    std::string_view id;
    std::uint64_t port = 0;
    const bool valid = split_word_number(request->text, id, port) && port > 0 && port < 65536;
    const int fd = valid ? connect_loopback(static_cast<std::uint16_t>(port)) : -1;
    if (!send_message(channel, (fd >= 0 ? "ok " : "refused ") + std::string(id), fd)) {
      ::_exit(0);
    }
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

}  // namespace sandgate::sandbox
