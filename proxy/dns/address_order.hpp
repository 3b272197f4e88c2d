// Destination address ordering after RFC 6724 section 6, done once per DNS answer (the answer is
// then cached in this order), never per connection.
//
// The rules that need no routing-table access beyond one connect() are applied: 1 (avoid
// unusable destinations: a UDP socket cannot be connected to them), 2 (matching scope),
// 5 (matching label), 6 (higher precedence), 8 (smaller scope), 9 (longest matching prefix, for
// IPv6) and 10 (otherwise keep the order given). Rules 3, 4 and 7 (deprecated, home and
// temporary addresses) need interface flags and are left out, as c-ares leaves them out.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <vector>

namespace sandgate::dns {

// Sorts `addresses` in place. Opens, connects and closes one UDP socket per address to learn the
// source address the kernel would use (nothing is sent). Thread-safe (no shared state).
void order_destinations(std::vector<boost::asio::ip::address>& addresses);

}  // namespace sandgate::dns
