// HOST:PORT parsing restricted to loopback (see loopback_endpoint.hpp).
#include "bench/load/loopback_endpoint.hpp"

#include <charconv>

namespace sandgate::load {

std::optional<boost::asio::ip::tcp::endpoint> parse_loopback_endpoint(std::string_view text,
                                                                      bool allow_port_zero,
                                                                      std::string& error) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    error = "expected HOST:PORT, got '" + std::string(text) + "'";
    return std::nullopt;
  }
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc{} || end != port_text.data() + port_text.size() || port > 65535 ||
      (port == 0 && !allow_port_zero)) {
    error = "port must be a number in 1..65535, got '" + std::string(port_text) + "'";
    return std::nullopt;
  }
  // Only IP literals (and the one name every system agrees on): no resolver, so no surprises.
  boost::system::error_code parse_error;
  const auto address = host == "localhost"
                           ? boost::asio::ip::address(boost::asio::ip::address_v4::loopback())
                           : boost::asio::ip::make_address(std::string(host), parse_error);
  if (parse_error) {
    error = "host must be an IP literal or localhost, got '" + std::string(host) + "'";
    return std::nullopt;
  }
  if (!address.is_loopback()) {
    error = "refusing non-loopback address " + address.to_string() +
            ": the load tool only talks to 127.0.0.0/8 and ::1";
    return std::nullopt;
  }
  return boost::asio::ip::tcp::endpoint(address, static_cast<unsigned short>(port));
}

std::string endpoint_text(const boost::asio::ip::tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  const std::string host = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return host + ":" + std::to_string(endpoint.port());
}

}  // namespace sandgate::load
