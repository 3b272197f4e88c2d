// The completion token every coroutine in the tree awaits Asio with.
//
// as_tuple(use_awaitable) hands an operation's error_code back as the first element of a tuple
// instead of throwing it: on the data plane an EOF, a reset or a cancelled timer is an ordinary
// outcome each step handles where it happens, so failures are values, not exceptions. One
// definition here, so every reader of a relay or a dial knows what `use_tuple` means.
//
// Include it from any target that links sandgate::asio (proxy/asio is the lowest layer).
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace sandgate {

inline constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);

}  // namespace sandgate
