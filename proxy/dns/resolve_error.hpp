// Why a lookup produced no address: what the resolver reports and what reading one DNS reply
// (answer.hpp) finds.
#pragma once

#include <cstdint>
#include <string_view>

namespace sandgate::dns {

// Why a lookup produced no address. Stable codes for logs and Proxy-Status.
enum class ResolveError : std::uint8_t {
  none,
  not_found,       // NXDOMAIN, or the name has no A/AAAA records
  timeout,         // no answer within ResolverOptions::timeout
  server_failure,  // SERVFAIL, REFUSED, malformed replies, connection refused by the server
  cancelled,       // the resolver was destroyed or the lookup cancelled
  bad_name,        // c-ares refused the name
};
std::string_view to_string(ResolveError);

}  // namespace sandgate::dns
