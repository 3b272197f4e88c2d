// Parsing of HOST:PORT arguments for the load tool, restricted to loopback addresses: the tool
// generates enough traffic to be a nuisance anywhere else, so it refuses to aim at anything else.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::load {

// Parses "127.0.0.1:8080", "[::1]:8080" or "localhost:8080" (read as 127.0.0.1). Port 0 is
// accepted only when `allow_port_zero` (a listen address). Returns nullopt and sets `error` to a
// sentence naming the problem when the text is malformed or the address is not loopback.
std::optional<boost::asio::ip::tcp::endpoint> parse_loopback_endpoint(std::string_view text,
                                                                      bool allow_port_zero,
                                                                      std::string& error);

// "127.0.0.1:8080" or "[::1]:8080": the spelling used in CONNECT requests and in reports.
std::string endpoint_text(const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace sandgate::load
