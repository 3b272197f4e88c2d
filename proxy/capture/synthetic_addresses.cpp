#include "proxy/capture/synthetic_addresses.hpp"

#include <stdexcept>

namespace sandgate::capture {
namespace {

constexpr std::uint32_t kV4Base = (198u << 24) | (18u << 16);  // 198.18.0.0/15

}  // namespace

SyntheticAddresses::SyntheticAddresses(const std::array<std::uint8_t, 8>& v6_prefix,
                                       std::size_t capacity)
    : prefix_(v6_prefix), capacity_(capacity) {
  if (prefix_[0] != 0xfd) {
    throw std::invalid_argument("the synthetic IPv6 prefix must be unique-local (fd00::/8)");
  }
  if (capacity_ == 0 || capacity_ > kMaxCapacity) {
    throw std::invalid_argument("the synthetic address book holds 1.." +
                                std::to_string(kMaxCapacity) + " names");
  }
}

SyntheticAddresses::Pair SyntheticAddresses::addresses(std::uint32_t index) const {
  std::array<std::uint8_t, 16> v6{};
  for (std::size_t i = 0; i < prefix_.size(); ++i) {
    v6[i] = prefix_[i];
  }
  v6[13] = static_cast<std::uint8_t>(index >> 16);
  v6[14] = static_cast<std::uint8_t>(index >> 8);
  v6[15] = static_cast<std::uint8_t>(index);
  return {rules::IpAddress::from_v4(kV4Base + index), rules::IpAddress::from_v6(v6)};
}

std::optional<std::uint32_t> SyntheticAddresses::index_of(const rules::IpAddress& address) const {
  if (address.is_v4()) {
    const std::uint32_t host = address.v4_host_order();
    if ((host & 0xfffe0000u) != kV4Base) {
      return std::nullopt;
    }
    const std::uint32_t index = host - kV4Base;
    if (index == 0 || index > kMaxCapacity) {
      return std::nullopt;
    }
    return index;
  }
  for (std::size_t i = 0; i < prefix_.size(); ++i) {
    if (address.bytes[i] != prefix_[i]) {
      return std::nullopt;
    }
  }
  for (std::size_t i = 8; i < 13; ++i) {
    if (address.bytes[i] != 0) {
      return std::nullopt;
    }
  }
  const std::uint32_t index = (std::uint32_t{address.bytes[13]} << 16) |
                              (std::uint32_t{address.bytes[14]} << 8) | address.bytes[15];
  if (index == 0 || index > kMaxCapacity) {
    return std::nullopt;
  }
  return index;
}

SyntheticAddresses::Pair SyntheticAddresses::assign(const std::string& name) {
  if (auto found = by_name_.find(name); found != by_name_.end()) {
    recency_.splice(recency_.begin(), recency_, found->second);
    return addresses(found->second->index);
  }
  std::uint32_t index = 0;
  if (by_name_.size() < capacity_ && next_unused_ <= kMaxCapacity) {
    index = next_unused_++;
  } else {
    // Full: the least recently used name gives its index up.
    Entry& oldest = recency_.back();
    index = oldest.index;
    by_name_.erase(oldest.name);
    by_index_.erase(index);
    recency_.pop_back();
  }
  recency_.push_front(Entry{name, index});
  by_name_[name] = recency_.begin();
  by_index_[index] = recency_.begin();
  return addresses(index);
}

std::optional<std::string> SyntheticAddresses::name_of(const rules::IpAddress& address) {
  const auto index = index_of(address);
  if (!index) {
    return std::nullopt;
  }
  const auto found = by_index_.find(*index);
  if (found == by_index_.end()) {
    return std::nullopt;
  }
  recency_.splice(recency_.begin(), recency_, found->second);
  return found->second->name;
}

bool SyntheticAddresses::is_synthetic(const rules::IpAddress& address) const {
  if (address.is_v4()) {
    return (address.v4_host_order() & 0xfffe0000u) == kV4Base;
  }
  for (std::size_t i = 0; i < prefix_.size(); ++i) {
    if (address.bytes[i] != prefix_[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace sandgate::capture
