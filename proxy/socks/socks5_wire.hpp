// SOCKS version 5 (RFC 1928) and its username/password sub-negotiation (RFC 1929) on the wire:
// the three messages a client sends before its bytes are relayed, read strictly and
// incrementally, and the replies the gate sends back.
//
// A SOCKS client speaks first, like an HTTP one, and its first byte tells the two apart: 0x05 is
// SOCKS5 and 0x04 SOCKS4/4a (refused: no authentication and no IPv6), while every HTTP method
// starts with a letter. Every message here has a bounded size by construction (at most 513 bytes:
// a 255-byte user name and a 255-byte password), so a reader never needs more than
// kLongestMessage bytes of buffer.
//
// Strict means: a version byte other than the expected one, a greeting with no methods, a
// reserved byte that is not zero, an unknown address type, an empty user name, password or
// domain name, or port 0 is malformed, never guessed at. A domain name is returned as the bytes
// the client sent; the caller parses it with rules::parse_host like every other host, so the
// name the policy checks is the name dialled.
//
// Pure functions on values; no I/O, no allocation beyond the strings returned; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "rules/ip_address.hpp"

namespace sandgate::socks {

inline constexpr std::uint8_t kVersion = 0x05;
inline constexpr std::uint8_t kVersion4 = 0x04;     // SOCKS4 and SOCKS4a: refused
inline constexpr std::uint8_t kAuthVersion = 0x01;  // RFC 1929's sub-negotiation
inline constexpr std::size_t kLongestMessage = 1 + 1 + 255 + 1 + 255;  // RFC 1929 request

// Authentication methods (RFC 1928 section 3). Only these two are ever chosen.
enum class Method : std::uint8_t {
  no_authentication = 0x00,
  username_password = 0x02,
  none_acceptable = 0xff,
};

// Commands (RFC 1928 section 4). Only CONNECT is served; BIND and UDP ASSOCIATE are refused with
// command_not_supported.
enum class Command : std::uint8_t { connect = 0x01, bind = 0x02, udp_associate = 0x03 };

// Reply codes (RFC 1928 section 6).
enum class ReplyCode : std::uint8_t {
  succeeded = 0x00,
  general_failure = 0x01,
  not_allowed_by_ruleset = 0x02,
  network_unreachable = 0x03,
  host_unreachable = 0x04,
  connection_refused = 0x05,
  ttl_expired = 0x06,
  command_not_supported = 0x07,
  address_type_not_supported = 0x08,
};

// The outcome of reading one message from the start of `bytes`.
enum class ReadStatus : std::uint8_t {
  complete,   // the message is whole: `used` bytes of the input belong to it
  need_more,  // every byte so far is valid; the message is not whole yet
  malformed,  // the bytes cannot be this message: `problem` says why
};

// The client's first message: VER NMETHODS METHODS...
struct Greeting {
  std::vector<std::uint8_t> methods;
};

// RFC 1929: VER ULEN UNAME PLEN PASSWD. Both fields are 1..255 bytes.
struct Credentials {
  std::string username;
  std::string password;
};

// The request: VER CMD RSV ATYP DST.ADDR DST.PORT.
struct Request {
  enum class AddressType : std::uint8_t { ipv4 = 0x01, domain = 0x03, ipv6 = 0x04 };
  Command command = Command::connect;
  AddressType address_type = AddressType::domain;
  std::string domain;        // address_type domain: the bytes sent (1..255), not yet checked
  rules::IpAddress address;  // address_type ipv4 or ipv6
  std::uint16_t port = 0;    // 1..65535
  // The command byte as sent, which may be none of the three commands (then command_known is
  // false and the reply is command_not_supported).
  std::uint8_t command_byte = 0x01;
  bool command_known = true;
};

template <typename Message>
struct Read {
  ReadStatus status = ReadStatus::need_more;
  std::size_t used = 0;  // complete: the message's length
  Message message{};     // complete: the message
  std::string problem;   // malformed: a short sentence for the log
  // malformed: the reply code to send, where the protocol has one for the problem (an unknown
  // address type has address_type_not_supported); general_failure otherwise.
  ReplyCode reply = ReplyCode::general_failure;
};

Read<Greeting> read_greeting(std::span<const std::uint8_t> bytes);
Read<Credentials> read_credentials(std::span<const std::uint8_t> bytes);
Read<Request> read_request(std::span<const std::uint8_t> bytes);

// The server's choice of method: VER METHOD.
std::array<std::uint8_t, 2> method_reply(Method method);

// RFC 1929's answer: VER STATUS, 0x00 for success and 0x01 for failure.
std::array<std::uint8_t, 2> credentials_reply(bool accepted);

// The reply to a request: VER REP RSV ATYP BND.ADDR BND.PORT. `bound` is the gate's own end of
// the upstream connection on success; on failure (and where the address is not worth telling)
// the all-zero IPv4 address and port 0, as RFC 1928 allows.
std::vector<std::uint8_t> request_reply(ReplyCode code, const rules::IpAddress* bound = nullptr,
                                        std::uint16_t bound_port = 0);

// SOCKS4's refusal (VN=0, CD=91 "request rejected or failed"), for a client that sent 0x04.
std::array<std::uint8_t, 8> socks4_refusal();

std::string_view to_string(ReplyCode code);  // e.g. "connection not allowed by ruleset"

}  // namespace sandgate::socks
