// DNS replies into record sets (contract: answer.hpp).
#include "proxy/dns/answer.hpp"

#include <ares.h>
#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/ip/address_v6.hpp>
#include <cstring>

namespace sandgate::dns {
namespace {

namespace asio = boost::asio;

// At most this many addresses are read from one reply (c-ares fills a caller-sized array); a
// name with more is still usable, the rest are dropped.
constexpr int max_addresses = 128;

constexpr std::size_t header_size = 12;
constexpr std::uint16_t type_soa = 6;

ResolveError map_status(int status) {
  switch (status) {
    case ARES_SUCCESS:
      return ResolveError::none;
    case ARES_ENOTFOUND:
    case ARES_ENODATA:
    case ARES_ENONAME:
      return ResolveError::not_found;
    case ARES_ETIMEOUT:
      return ResolveError::timeout;
    case ARES_ECANCELLED:
    case ARES_EDESTRUCTION:
      return ResolveError::cancelled;
    case ARES_EBADNAME:
      return ResolveError::bad_name;
    default:
      // SERVFAIL, REFUSED, FORMERR, NOTIMP, malformed replies, refused connections, out of
      // memory: nothing about the name, so never cached as if it were.
      return ResolveError::server_failure;
  }
}

std::uint16_t read16(const unsigned char* p) {
  return static_cast<std::uint16_t>(p[0] << 8 | p[1]);
}

std::uint32_t read32(const unsigned char* p) {
  return static_cast<std::uint32_t>(read16(p)) << 16 | read16(p + 2);
}

// Moves `at` past one (possibly compressed) name; false if it runs off the message.
bool skip_name(const unsigned char* msg, std::size_t size, std::size_t& at) {
  for (int labels = 0; labels < 128; ++labels) {
    if (at >= size) {
      return false;
    }
    const unsigned char length = msg[at];
    if (length == 0) {
      at += 1;
      return true;
    }
    if ((length & 0xc0) == 0xc0) {  // a pointer ends the name
      at += 2;
      return at <= size;
    }
    if ((length & 0xc0) != 0) {
      return false;  // reserved label types
    }
    at += 1 + length;
  }
  return false;
}

}  // namespace

std::optional<std::uint32_t> negative_ttl(const unsigned char* msg, std::size_t size) {
  if (msg == nullptr || size < header_size) {
    return std::nullopt;
  }
  const std::uint16_t questions = read16(msg + 4);
  const std::uint16_t answers = read16(msg + 6);
  const std::uint16_t authority = read16(msg + 8);
  std::size_t at = header_size;
  for (std::uint16_t i = 0; i < questions; ++i) {
    if (!skip_name(msg, size, at) || (at += 4) > size) {
      return std::nullopt;
    }
  }
  for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(answers) + authority; ++i) {
    if (!skip_name(msg, size, at) || at + 10 > size) {
      return std::nullopt;
    }
    const std::uint16_t type = read16(msg + at);
    const std::uint32_t ttl = read32(msg + at + 4);
    const std::uint16_t rdlength = read16(msg + at + 8);
    const std::size_t rdata = at + 10;
    if (rdata + rdlength > size) {
      return std::nullopt;
    }
    if (i >= answers && type == type_soa) {
      // MNAME, RNAME, then SERIAL REFRESH RETRY EXPIRE MINIMUM.
      std::size_t field = rdata;
      if (!skip_name(msg, size, field) || !skip_name(msg, size, field) ||
          field + 20 > rdata + rdlength) {
        return std::nullopt;
      }
      return std::min(ttl, read32(msg + field + 16));
    }
    at = rdata + rdlength;
  }
  return std::nullopt;
}

RecordSet read_answer(int status, const unsigned char* reply, int length, bool ipv6) {
  RecordSet set;
  set.error = map_status(status);
  if (set.error == ResolveError::not_found) {
    set.ttl = negative_ttl(reply, length > 0 ? static_cast<std::size_t>(length) : 0);
    return set;
  }
  if (set.error != ResolveError::none || reply == nullptr) {
    return set;
  }

  int count = max_addresses;
  int parsed = ARES_SUCCESS;
  if (ipv6) {
    std::array<ares_addr6ttl, max_addresses> records{};
    parsed = ares_parse_aaaa_reply(reply, length, nullptr, records.data(), &count);
    for (int i = 0; parsed == ARES_SUCCESS && i < count; ++i) {
      asio::ip::address_v6::bytes_type bytes;
      std::memcpy(bytes.data(), &records[i].ip6addr, bytes.size());
      set.addresses.push_back(asio::ip::address_v6(bytes));
      set.ttl = std::min<std::uint32_t>(set.ttl.value_or(UINT32_MAX),
                                        static_cast<std::uint32_t>(std::max(records[i].ttl, 0)));
    }
  } else {
    std::array<ares_addrttl, max_addresses> records{};
    parsed = ares_parse_a_reply(reply, length, nullptr, records.data(), &count);
    for (int i = 0; parsed == ARES_SUCCESS && i < count; ++i) {
      set.addresses.push_back(asio::ip::address_v4(ntohl(records[i].ipaddr.s_addr)));
      set.ttl = std::min<std::uint32_t>(set.ttl.value_or(UINT32_MAX),
                                        static_cast<std::uint32_t>(std::max(records[i].ttl, 0)));
    }
  }
  if (parsed != ARES_SUCCESS || set.addresses.empty()) {
    // A reply that names only a CNAME (or that c-ares cannot read) gives no address; with
    // nothing to say how long that holds, it is not cached.
    set.error = parsed == ARES_SUCCESS || parsed == ARES_ENODATA ? ResolveError::not_found
                                                                 : ResolveError::server_failure;
    set.addresses.clear();
    set.ttl = std::nullopt;
  }
  return set;
}

RecordSet merge_answers(const RecordSet& a, const RecordSet& aaaa) {
  RecordSet merged;
  for (const RecordSet* set : {&a, &aaaa}) {
    for (const auto& address : set->addresses) {
      if (std::find(merged.addresses.begin(), merged.addresses.end(), address) ==
          merged.addresses.end()) {
        merged.addresses.push_back(address);
      }
    }
  }
  if (!merged.addresses.empty()) {
    // One family answering is enough; the other's failure says nothing about these addresses.
    for (const RecordSet* set : {&a, &aaaa}) {
      if (!set->addresses.empty() && set->ttl) {
        merged.ttl = std::min(merged.ttl.value_or(UINT32_MAX), *set->ttl);
      }
    }
    return merged;
  }
  if (a.error == ResolveError::not_found && aaaa.error == ResolveError::not_found) {
    merged.error = ResolveError::not_found;
    // Cached only if both replies said for how long.
    if (a.ttl && aaaa.ttl) {
      merged.ttl = std::min(*a.ttl, *aaaa.ttl);
    }
    return merged;
  }
  // The pair failed for a reason other than the name not existing: the most telling one.
  for (const ResolveError error : {ResolveError::bad_name, ResolveError::cancelled,
                                   ResolveError::timeout, ResolveError::server_failure}) {
    if (a.error == error || aaaa.error == error) {
      merged.error = error;
      return merged;
    }
  }
  merged.error = ResolveError::server_failure;
  return merged;
}

}  // namespace sandgate::dns
