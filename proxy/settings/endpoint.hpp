// The network addresses the settings name, parsed once when the settings are loaded: the gate's
// listener, the admin endpoint and the DNS servers. The server, the admin endpoint and the
// resolver take these types and never parse text again. Plain values; no Asio here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "rules/expected.hpp"

namespace sandgate::settings {

// A numeric IP address and a port: `127.0.0.1:9877`, `[::1]:53`.
struct TcpEndpoint {
  std::string address;  // dotted IPv4 or IPv6 text, without brackets (checked numeric)
  std::uint16_t port = 0;

  bool is_v6() const { return address.find(':') != std::string::npos; }
  // `ADDR:PORT`, or `[V6]:PORT`.
  std::string text() const {
    return (is_v6() ? "[" + address + "]" : address) + ":" + std::to_string(port);
  }
  bool operator==(const TcpEndpoint&) const = default;
};

// A unix stream socket's absolute path (the listener of `listen unix:PATH`).
struct UnixPath {
  std::string path;
  bool operator==(const UnixPath&) const = default;
};

// What the gate listens on.
struct ListenAddress {
  std::variant<TcpEndpoint, UnixPath> where;

  const TcpEndpoint* tcp() const { return std::get_if<TcpEndpoint>(&where); }
  const UnixPath* unix_socket() const { return std::get_if<UnixPath>(&where); }
  // `127.0.0.1:9877`, `[::1]:9877` or `unix:/path`, as the setting is written.
  std::string text() const { return tcp() ? tcp()->text() : "unix:" + unix_socket()->path; }
  bool operator==(const ListenAddress&) const = default;
};

// Parses `ADDR:PORT` or `[V6]:PORT` with a numeric address. Without `port_required`, a bare
// address takes `default_port` (DNS servers: 53). Ports below `min_port` are refused (0 may be
// allowed: pick a free port). The error says what is wrong with the text, quoting it.
Expected<TcpEndpoint, std::string> parse_tcp_endpoint(std::string_view text, bool port_required,
                                                      std::uint16_t min_port,
                                                      std::uint16_t default_port = 0);

// Parses a listen setting: `unix:/absolute/path` (fits in a sockaddr_un) or `ADDR:PORT`. `~` is
// not expanded here (the settings loader does that first).
Expected<ListenAddress, std::string> parse_listen_address(std::string_view text);

}  // namespace sandgate::settings
