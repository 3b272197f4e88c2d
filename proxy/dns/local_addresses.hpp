// Where rules::this_machine() (rules/local_addresses.hpp) gets its addresses: the kernel's list
// of every address on every interface (getifaddrs), read when the gate starts and kept current
// by a thread of its own, which reads it again on each address notification of the kernel
// (Linux: a NETLINK_ROUTE socket subscribed to IPv4 and IPv6 address changes) and on a cheap
// schedule anyway (every `interval`, for a notification lost to a full socket buffer, and on
// systems without netlink). A decision never waits for a read: it consults the last table.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "rules/ip_address.hpp"

namespace sandgate::dns {

// Every address of every interface, loopback included. Empty when the kernel will not say
// (the error is not fatal: the loopback rules still apply).
std::vector<rules::IpAddress> read_local_addresses();

// Reads the addresses into rules::this_machine() now, and keeps them current until destroyed.
// Thread-safe; the destructor stops and joins the thread (within a few milliseconds).
class LocalAddressWatch {
 public:
  explicit LocalAddressWatch(std::chrono::milliseconds interval = std::chrono::seconds(5));
  ~LocalAddressWatch();
  LocalAddressWatch(const LocalAddressWatch&) = delete;
  LocalAddressWatch& operator=(const LocalAddressWatch&) = delete;

  // How many times the addresses were read; for tests.
  std::uint64_t reads() const { return reads_.load(std::memory_order_relaxed); }

 private:
  void run();
  void refresh();

  std::chrono::milliseconds interval_;
  int stop_read_ = -1;  // a pipe: the destructor writes a byte to wake the thread
  int stop_write_ = -1;
  int notifications_ = -1;  // the netlink socket, or -1
  std::atomic<std::uint64_t> reads_{0};
  std::thread thread_;
};

}  // namespace sandgate::dns
