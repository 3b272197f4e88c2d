#include "proxy/socks/socks5_wire.hpp"

namespace sandgate::socks {
namespace {

template <typename Message>
Read<Message> malformed(std::string problem, ReplyCode reply = ReplyCode::general_failure) {
  Read<Message> read;
  read.status = ReadStatus::malformed;
  read.problem = std::move(problem);
  read.reply = reply;
  return read;
}

// The version byte every message starts with, checked as soon as it is there: a client that
// sent 0x04 or an HTTP request is told so after one byte, not after a timeout.
template <typename Message>
bool wrong_version(std::span<const std::uint8_t> bytes, std::uint8_t expected, Read<Message>& out,
                   std::string_view what) {
  if (bytes.empty() || bytes[0] == expected) {
    return false;
  }
  out = malformed<Message>(std::string(what) + ": version byte " + std::to_string(bytes[0]) +
                           ", expected " + std::to_string(expected));
  return true;
}

std::uint16_t port_at(std::span<const std::uint8_t> bytes, std::size_t at) {
  return static_cast<std::uint16_t>((bytes[at] << 8) | bytes[at + 1]);
}

}  // namespace

Read<Greeting> read_greeting(std::span<const std::uint8_t> bytes) {
  Read<Greeting> read;
  if (wrong_version(bytes, kVersion, read, "greeting")) {
    return read;
  }
  if (bytes.size() < 2) {
    return read;
  }
  const std::size_t count = bytes[1];
  if (count == 0) {
    return malformed<Greeting>("greeting: no authentication methods offered");
  }
  if (bytes.size() < 2 + count) {
    return read;
  }
  read.status = ReadStatus::complete;
  read.used = 2 + count;
  read.message.methods.assign(bytes.begin() + 2, bytes.begin() + 2 + count);
  return read;
}

Read<Credentials> read_credentials(std::span<const std::uint8_t> bytes) {
  Read<Credentials> read;
  if (wrong_version(bytes, kAuthVersion, read, "username/password")) {
    return read;
  }
  if (bytes.size() < 2) {
    return read;
  }
  const std::size_t user_length = bytes[1];
  if (user_length == 0) {
    return malformed<Credentials>("username/password: empty user name");
  }
  if (bytes.size() < 2 + user_length + 1) {
    return read;
  }
  const std::size_t password_length = bytes[2 + user_length];
  if (password_length == 0) {
    return malformed<Credentials>("username/password: empty password");
  }
  const std::size_t total = 2 + user_length + 1 + password_length;
  if (bytes.size() < total) {
    return read;
  }
  read.status = ReadStatus::complete;
  read.used = total;
  const auto* user = reinterpret_cast<const char*>(bytes.data() + 2);
  read.message.username.assign(user, user_length);
  const auto* password = reinterpret_cast<const char*>(bytes.data() + 3 + user_length);
  read.message.password.assign(password, password_length);
  return read;
}

Read<Request> read_request(std::span<const std::uint8_t> bytes) {
  Read<Request> read;
  if (wrong_version(bytes, kVersion, read, "request")) {
    return read;
  }
  if (bytes.size() < 4) {
    if (bytes.size() >= 3 && bytes[2] != 0) {
      return malformed<Request>("request: reserved byte is not zero");
    }
    return read;
  }
  if (bytes[2] != 0) {
    return malformed<Request>("request: reserved byte is not zero");
  }
  Request& request = read.message;
  request.command_byte = bytes[1];
  request.command_known = bytes[1] >= 0x01 && bytes[1] <= 0x03;
  if (request.command_known) {
    request.command = static_cast<Command>(bytes[1]);
  }
  std::size_t address_end = 0;
  switch (bytes[3]) {
    case 0x01:  // IPv4: four bytes
      request.address_type = Request::AddressType::ipv4;
      address_end = 4 + 4;
      break;
    case 0x04:  // IPv6: sixteen bytes
      request.address_type = Request::AddressType::ipv6;
      address_end = 4 + 16;
      break;
    case 0x03:  // a domain name: one length byte, then the name
      request.address_type = Request::AddressType::domain;
      if (bytes.size() < 5) {
        return read;
      }
      if (bytes[4] == 0) {
        return malformed<Request>("request: empty domain name");
      }
      address_end = 5 + bytes[4];
      break;
    default:
      return malformed<Request>("request: unknown address type " + std::to_string(bytes[3]),
                                ReplyCode::address_type_not_supported);
  }
  const std::size_t total = address_end + 2;
  if (bytes.size() < total) {
    return read;
  }
  switch (request.address_type) {
    case Request::AddressType::ipv4:
      request.address = rules::IpAddress::from_v4(
          (std::uint32_t{bytes[4]} << 24) | (std::uint32_t{bytes[5]} << 16) |
          (std::uint32_t{bytes[6]} << 8) | std::uint32_t{bytes[7]});
      break;
    case Request::AddressType::ipv6: {
      std::array<std::uint8_t, 16> raw{};
      for (std::size_t i = 0; i < raw.size(); ++i) {
        raw[i] = bytes[4 + i];
      }
      request.address = rules::IpAddress::from_v6(raw);
      break;
    }
    case Request::AddressType::domain:
      request.domain.assign(reinterpret_cast<const char*>(bytes.data() + 5), bytes[4]);
      break;
  }
  request.port = port_at(bytes, address_end);
  if (request.port == 0) {
    return malformed<Request>("request: port 0");
  }
  read.status = ReadStatus::complete;
  read.used = total;
  return read;
}

std::array<std::uint8_t, 2> method_reply(Method method) {
  return {kVersion, static_cast<std::uint8_t>(method)};
}

std::array<std::uint8_t, 2> credentials_reply(bool accepted) {
  return {kAuthVersion, static_cast<std::uint8_t>(accepted ? 0x00 : 0x01)};
}

std::vector<std::uint8_t> request_reply(ReplyCode code, const rules::IpAddress* bound,
                                        std::uint16_t bound_port) {
  std::vector<std::uint8_t> reply{kVersion, static_cast<std::uint8_t>(code), 0x00};
  if (bound != nullptr && !bound->is_v4()) {
    reply.push_back(0x04);
    reply.insert(reply.end(), bound->bytes.begin(), bound->bytes.end());
  } else {
    reply.push_back(0x01);
    if (bound != nullptr) {
      reply.insert(reply.end(), bound->bytes.begin(), bound->bytes.begin() + 4);
    } else {
      reply.insert(reply.end(), 4, 0x00);
    }
  }
  reply.push_back(static_cast<std::uint8_t>(bound_port >> 8));
  reply.push_back(static_cast<std::uint8_t>(bound_port & 0xff));
  return reply;
}

std::array<std::uint8_t, 8> socks4_refusal() { return {0x00, 91, 0, 0, 0, 0, 0, 0}; }

std::string_view to_string(ReplyCode code) {
  switch (code) {
    case ReplyCode::succeeded:
      return "succeeded";
    case ReplyCode::general_failure:
      return "general SOCKS server failure";
    case ReplyCode::not_allowed_by_ruleset:
      return "connection not allowed by ruleset";
    case ReplyCode::network_unreachable:
      return "network unreachable";
    case ReplyCode::host_unreachable:
      return "host unreachable";
    case ReplyCode::connection_refused:
      return "connection refused";
    case ReplyCode::ttl_expired:
      return "TTL expired";
    case ReplyCode::command_not_supported:
      return "command not supported";
    case ReplyCode::address_type_not_supported:
      return "address type not supported";
  }
  return "unknown reply code";
}

}  // namespace sandgate::socks
