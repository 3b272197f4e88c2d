// Reading one DNS reply (to an A or an AAAA query) into what the resolver caches: the addresses
// with the smallest TTL among them, or, for a negative reply (NXDOMAIN, or NOERROR without
// records), how long RFC 2308 lets it be cached: min(SOA TTL, SOA MINIMUM) from the authority
// section. Pure functions over bytes; every read is bounds-checked.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "proxy/dns/resolve_error.hpp"

namespace sandgate::dns {

struct RecordSet {
  ResolveError error = ResolveError::none;
  std::vector<boost::asio::ip::address> addresses;
  // Positive: the smallest TTL of the address records (CNAME TTLs included, as c-ares clamps
  // them). Negative: the SOA-derived negative TTL, or nothing when the reply carried no SOA (then
  // it must not be cached).
  std::optional<std::uint32_t> ttl;
};

// `status` is what ares_query() reported; `reply` may be null (timeouts, cancellation).
RecordSet read_answer(int status, const unsigned char* reply, int length, bool ipv6);

// The negative-caching TTL of a reply: min(TTL, MINIMUM) of the first SOA record in its
// authority section, or nothing if there is none or the message is malformed.
std::optional<std::uint32_t> negative_ttl(const unsigned char* reply, std::size_t length);

// A and AAAA replies to one name, merged: addresses (A first, then AAAA; the caller orders them)
// and the error that describes the pair, with the TTL the pair may be cached for.
RecordSet merge_answers(const RecordSet& a, const RecordSet& aaaa);

}  // namespace sandgate::dns
