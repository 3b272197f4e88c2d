// This machine's addresses, read from the kernel and kept current. See local_addresses.hpp.
#include "proxy/dns/local_addresses.hpp"

#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstring>

#ifdef __linux__
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#endif

#include "rules/local_addresses.hpp"

namespace sandgate::dns {

std::vector<rules::IpAddress> read_local_addresses() {
  std::vector<rules::IpAddress> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) {
    return out;
  }
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr) {
      continue;
    }
    if (entry->ifa_addr->sa_family == AF_INET) {
      const auto* v4 = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
      out.push_back(rules::IpAddress::from_v4(ntohl(v4->sin_addr.s_addr)));
    } else if (entry->ifa_addr->sa_family == AF_INET6) {
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(entry->ifa_addr);
      std::array<std::uint8_t, 16> bytes{};
      std::memcpy(bytes.data(), &v6->sin6_addr, bytes.size());
      out.push_back(rules::IpAddress::from_v6(bytes));
    }
  }
  ::freeifaddrs(list);
  return out;
}

LocalAddressWatch::LocalAddressWatch(std::chrono::milliseconds interval) : interval_(interval) {
  refresh();  // before the first connection is decided
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC | O_NONBLOCK) != 0) {
    return;  // no thread: the table stays as read now
  }
  stop_read_ = ends[0];
  stop_write_ = ends[1];
#ifdef __linux__
  notifications_ = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
  if (notifications_ >= 0) {
    sockaddr_nl local{};
    local.nl_family = AF_NETLINK;
    local.nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
    if (::bind(notifications_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
      ::close(notifications_);
      notifications_ = -1;  // the schedule alone keeps the table current
    }
  }
#endif
  thread_ = std::thread([this] { run(); });
}

LocalAddressWatch::~LocalAddressWatch() {
  if (thread_.joinable()) {
    const char byte = 0;
    (void)!::write(stop_write_, &byte, 1);
    thread_.join();
  }
  for (int fd : {stop_read_, stop_write_, notifications_}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

void LocalAddressWatch::refresh() {
  rules::this_machine().replace(read_local_addresses());
  reads_.fetch_add(1, std::memory_order_relaxed);
}

void LocalAddressWatch::run() {
  std::array<char, 8192> sink{};
  for (;;) {
    std::array<pollfd, 2> waits{{{stop_read_, POLLIN, 0}, {notifications_, POLLIN, 0}}};
    const int ready =
        ::poll(waits.data(), notifications_ >= 0 ? 2 : 1, static_cast<int>(interval_.count()));
    if (ready < 0 && errno != EINTR) {
      return;
    }
    if (waits[0].revents != 0) {
      return;  // stopping
    }
    if (ready > 0 && waits[1].revents != 0) {
      // What changed does not matter: the whole list is read again. Take every queued
      // notification first, so that a burst (an interface with many addresses coming up) costs
      // one read.
      while (::recv(notifications_, sink.data(), sink.size(), MSG_DONTWAIT) > 0) {
      }
    }
    refresh();
  }
}

}  // namespace sandgate::dns
