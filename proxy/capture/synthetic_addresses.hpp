// The name <-> address book of a `sandgate run` with capture: each name the policy lets the
// confined command resolve gets an IPv4 address from 198.18.0.0/15 (RFC 2544's benchmarking
// range, never routed on the internet) and an IPv6 address from a unique-local /64 (RFC 4193),
// so that when the command connects, the address it dialled says which name it meant.
//
// Bounded: at most `capacity` names; when full, the least recently used name gives its
// addresses up. A command that kept a recycled address reaches the name that holds it now,
// which the gate judges like any other: recycling can misdirect a stale client, never open a
// way around the policy. Not thread-safe: owned by the one thread that serves DNS and looks up
// captured connections (or guarded by its owner).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>

#include "rules/ip_address.hpp"

namespace sandgate::capture {

class SyntheticAddresses {
 public:
  // Addresses 198.18.0.1 .. 198.19.255.254: the network's first and last are left out.
  static constexpr std::size_t kMaxCapacity = (1u << 17) - 2;

  struct Pair {
    rules::IpAddress v4;
    rules::IpAddress v6;
  };

  // `v6_prefix`: the /64's first eight bytes, which must start with 0xfd (a locally assigned
  // unique-local prefix; pick the 40-bit global ID at random per run). `capacity`: 1..kMaxCapacity.
  SyntheticAddresses(const std::array<std::uint8_t, 8>& v6_prefix, std::size_t capacity);

  // The addresses of `name` (normal form), assigning them if it has none; marks it used.
  Pair assign(const std::string& name);

  // The name an address was assigned to, if it is one of ours and still assigned; marks it used.
  std::optional<std::string> name_of(const rules::IpAddress& address);

  // Whether an address lies in one of the two synthetic ranges (assigned or not).
  bool is_synthetic(const rules::IpAddress& address) const;

  std::size_t size() const { return by_name_.size(); }
  std::size_t capacity() const { return capacity_; }

 private:
  struct Entry {
    std::string name;
    std::uint32_t index;  // 1..kMaxCapacity: the host part of both addresses
  };
  Pair addresses(std::uint32_t index) const;
  std::optional<std::uint32_t> index_of(const rules::IpAddress& address) const;

  std::array<std::uint8_t, 8> prefix_;
  std::size_t capacity_;
  std::uint32_t next_unused_ = 1;
  std::list<Entry> recency_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_name_;
  std::unordered_map<std::uint32_t, std::list<Entry>::iterator> by_index_;
};

}  // namespace sandgate::capture
