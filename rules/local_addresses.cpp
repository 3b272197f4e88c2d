// This machine's addresses. See local_addresses.hpp.
#include "rules/local_addresses.hpp"

#include <algorithm>

namespace sandgate::rules {
namespace {

// Family and bytes: a zone names the interface a link-local address was reached on, not
// another address.
bool less(const IpAddress& a, const IpAddress& b) {
  if (a.family != b.family) {
    return a.family < b.family;
  }
  return a.bytes < b.bytes;
}

bool same(const IpAddress& a, const IpAddress& b) {
  return a.family == b.family && a.bytes == b.bytes;
}

bool in(const std::vector<IpAddress>& set, const IpAddress& address) {
  const auto at = std::lower_bound(set.begin(), set.end(), address, less);
  return at != set.end() && same(*at, address);
}

}  // namespace

void LocalAddresses::replace(std::vector<IpAddress> addresses) {
  for (IpAddress& address : addresses) {
    address.zone.clear();
  }
  std::sort(addresses.begin(), addresses.end(), less);
  addresses.erase(std::unique(addresses.begin(), addresses.end(), same), addresses.end());
  auto fresh = std::make_shared<const Set>(std::move(addresses));
  std::lock_guard lock(mutex_);
  if (*fresh == *set_) {
    return;  // unchanged: the readers keep what they hold
  }
  set_ = std::move(fresh);
  generation_.fetch_add(1, std::memory_order_release);
}

bool LocalAddresses::contains(const IpAddress& address) const {
  // Each thread's own reference to the current set, taken again only after a change.
  struct Cached {
    const LocalAddresses* owner = nullptr;
    std::uint64_t generation = 0;
    std::shared_ptr<const Set> set;
  };
  thread_local Cached cached;
  const std::uint64_t now = generation_.load(std::memory_order_acquire);
  if (cached.owner != this || cached.generation != now || !cached.set) {
    std::lock_guard lock(mutex_);
    cached.owner = this;
    cached.set = set_;
    cached.generation = generation_.load(std::memory_order_relaxed);
  }
  const Set& set = *cached.set;
  if (set.empty()) {
    return false;
  }
  if (in(set, address)) {
    return true;
  }
  // An IPv6 spelling of a local IPv4 address (::ffff:10.0.0.5, and the other forms that carry
  // one) is refused with it: the stricter reading.
  if (!address.is_v4()) {
    if (auto embedded = embedded_ipv4(address)) {
      return in(set, embedded->address);
    }
  }
  return false;
}

std::vector<IpAddress> LocalAddresses::addresses() const {
  std::lock_guard lock(mutex_);
  return *set_;
}

LocalAddresses& this_machine() {
  static LocalAddresses table;
  return table;
}

}  // namespace sandgate::rules
