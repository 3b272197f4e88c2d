// This machine's own addresses: every address the kernel has on any interface (a LAN address,
// docker0's, a VPN's), kept by the proxy (proxy/dns/local_addresses.hpp reads them and keeps the
// table current) and consulted by the policy, which refuses them as it refuses loopback: a
// service bound to 0.0.0.0 on the host answers on every one of them.
//
// One table per process (this_machine()): the addresses are the machine's, not a policy's, and
// change without a reload. contains() is what every decision calls: it takes no lock unless the
// table changed since the calling thread last looked (each thread keeps its own reference to the
// current set), so a change costs each thread one short lock and the steady state none.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "rules/ip_address.hpp"

namespace sandgate::rules {

class LocalAddresses {
 public:
  // Replaces the set (any order, duplicates allowed; zones are ignored). Any thread.
  void replace(std::vector<IpAddress> addresses);
  // True when `address` (or the IPv4 address an IPv6 form carries) is one of the set.
  bool contains(const IpAddress& address) const;
  // The set, sorted. Any thread.
  std::vector<IpAddress> addresses() const;
  // How many times the set changed; for tests.
  std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  using Set = std::vector<IpAddress>;
  mutable std::mutex mutex_;  // guards set_; held to swap it or to take a reference to it
  std::shared_ptr<const Set> set_ = std::make_shared<const Set>();
  std::atomic<std::uint64_t> generation_{0};
};

// The process's table. Empty until the proxy fills it (tests may fill it themselves).
LocalAddresses& this_machine();

}  // namespace sandgate::rules
