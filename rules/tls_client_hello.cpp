// ClientHello reading. Layout (RFC 8446 4.1.2, RFC 6066 3):
//   record:    type(1)=22 version(2) length(2) fragment
//   handshake: type(1)=1 length(3) legacy_version(2) random(32) session_id<0..32>
//              cipher_suites<2..2^16-2> compression_methods<1..2^8-1> extensions<0..2^16-1>
//   extension: type(2) length(2) data; server_name is type 0:
//              server_name_list<1..2^16-1> of { name_type(1)=0 host_name<1..2^16-1> }
#include "rules/tls_client_hello.hpp"

namespace sandgate::rules {
namespace {

constexpr std::uint8_t kHandshakeRecord = 22;
constexpr std::uint8_t kClientHelloType = 1;
constexpr std::uint16_t kServerNameExtension = 0;
// draft-ietf-tls-esni: encrypted_client_hello. Its presence means the name above may be only
// the outer, public name of a client-facing server.
constexpr std::uint16_t kEncryptedClientHelloExtension = 0xfe0d;
// RFC 7301: protocol_name_list<2..2^16-1> of ProtocolName<1..2^8-1>.
constexpr std::uint16_t kAlpnExtension = 16;
constexpr std::uint8_t kHostNameType = 0;

// A bounds-checked cursor: every read fails cleanly past the end.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool u8(std::uint8_t& out) {
    if (data_.size() < 1) {
      return false;
    }
    out = static_cast<std::uint8_t>(data_[0]);
    data_.remove_prefix(1);
    return true;
  }
  bool u16(std::uint16_t& out) {
    if (data_.size() < 2) {
      return false;
    }
    out = static_cast<std::uint16_t>((static_cast<std::uint8_t>(data_[0]) << 8) |
                                     static_cast<std::uint8_t>(data_[1]));
    data_.remove_prefix(2);
    return true;
  }
  bool u24(std::uint32_t& out) {
    if (data_.size() < 3) {
      return false;
    }
    out = (static_cast<std::uint32_t>(static_cast<std::uint8_t>(data_[0])) << 16) |
          (static_cast<std::uint32_t>(static_cast<std::uint8_t>(data_[1])) << 8) |
          static_cast<std::uint8_t>(data_[2]);
    data_.remove_prefix(3);
    return true;
  }
  bool bytes(std::size_t n, std::string_view& out) {
    if (data_.size() < n) {
      return false;
    }
    out = data_.substr(0, n);
    data_.remove_prefix(n);
    return true;
  }
  bool skip(std::size_t n) {
    std::string_view ignored;
    return bytes(n, ignored);
  }
  // A vector with a length prefix of `width` bytes.
  bool vector(int width, std::string_view& out) {
    std::uint32_t length = 0;
    if (width == 1) {
      std::uint8_t n = 0;
      if (!u8(n)) {
        return false;
      }
      length = n;
    } else {
      std::uint16_t n = 0;
      if (!u16(n)) {
        return false;
      }
      length = n;
    }
    return bytes(length, out);
  }
  bool empty() const { return data_.empty(); }

 private:
  std::string_view data_;
};

ClientHello result(ClientHello::Status status, std::string name = {}) {
  return ClientHello{status, std::move(name)};
}

// Parses a complete ClientHello body (after the handshake header).
ClientHello parse_body(std::string_view body) {
  Reader reader(body);
  std::string_view ignored;
  if (!reader.skip(2 + 32) || !reader.vector(1, ignored) || !reader.vector(2, ignored) ||
      !reader.vector(1, ignored)) {
    return result(ClientHello::Status::malformed);
  }
  if (reader.empty()) {
    return result(ClientHello::Status::tls);  // no extensions at all (very old clients)
  }
  std::string_view extensions;
  if (!reader.vector(2, extensions)) {
    return result(ClientHello::Status::malformed);
  }
  Reader each(extensions);
  std::string name;
  bool seen_sni = false;
  bool ech = false;
  bool seen_alpn = false;
  bool offers_h2 = false;
  while (!each.empty()) {
    std::uint16_t type = 0;
    std::string_view data;
    if (!each.u16(type) || !each.vector(2, data)) {
      return result(ClientHello::Status::malformed);
    }
    if (type == kEncryptedClientHelloExtension) {
      ech = true;
      continue;
    }
    if (type == kAlpnExtension) {
      if (seen_alpn) {
        return result(ClientHello::Status::malformed);  // duplicate extensions are illegal
      }
      seen_alpn = true;
      Reader alpn(data);
      std::string_view list;
      if (!alpn.vector(2, list) || !alpn.empty() || list.empty()) {
        return result(ClientHello::Status::malformed);
      }
      Reader names(list);
      while (!names.empty()) {
        std::string_view protocol;
        if (!names.vector(1, protocol) || protocol.empty()) {
          return result(ClientHello::Status::malformed);
        }
        offers_h2 = offers_h2 || protocol == "h2";
      }
      continue;
    }
    if (type != kServerNameExtension) {
      continue;
    }
    if (seen_sni) {
      return result(ClientHello::Status::malformed);  // duplicate extensions are illegal
    }
    seen_sni = true;
    Reader sni(data);
    std::string_view list;
    if (!sni.vector(2, list) || !sni.empty() || list.empty()) {
      return result(ClientHello::Status::malformed);
    }
    Reader entries(list);
    while (!entries.empty()) {
      std::uint8_t name_type = 0;
      std::string_view host;
      if (!entries.u8(name_type) || !entries.vector(2, host) || host.empty()) {
        return result(ClientHello::Status::malformed);
      }
      if (name_type == kHostNameType) {
        if (!name.empty()) {
          return result(ClientHello::Status::malformed);  // one host_name at most
        }
        name.assign(host);
      }
    }
  }
  ClientHello hello = result(ClientHello::Status::tls, std::move(name));
  hello.encrypted_client_hello = ech;
  hello.offers_h2 = offers_h2;
  return hello;
}

}  // namespace

ClientHello read_client_hello(std::string_view data) {
  if (data.empty()) {
    return result(ClientHello::Status::need_more);
  }
  const auto first = static_cast<std::uint8_t>(data[0]);
  if (first != kHandshakeRecord) {
    constexpr std::string_view kSsh = "SSH-";
    const auto n = std::min(data.size(), kSsh.size());
    if (data.substr(0, n) == kSsh.substr(0, n)) {
      return result(n == kSsh.size() ? ClientHello::Status::ssh : ClientHello::Status::need_more);
    }
    return result(ClientHello::Status::other);
  }

  // Gather the handshake bytes from consecutive handshake records.
  std::string handshake;
  Reader records(data);
  for (;;) {
    std::uint8_t type = 0;
    std::uint16_t version = 0;
    std::uint16_t length = 0;
    if (records.empty()) {
      return result(ClientHello::Status::need_more);
    }
    if (!records.u8(type)) {
      return result(ClientHello::Status::need_more);
    }
    if (type != kHandshakeRecord) {
      return result(ClientHello::Status::malformed);
    }
    if (!records.u16(version) || !records.u16(length)) {
      return result(ClientHello::Status::need_more);
    }
    if ((version >> 8) != 3 || length == 0 || length > 16384 + 256) {
      return result(ClientHello::Status::malformed);
    }
    std::string_view fragment;
    if (!records.bytes(length, fragment)) {
      return result(ClientHello::Status::need_more);
    }
    handshake.append(fragment);
    if (handshake.size() > kMaxClientHello + 4) {
      return result(ClientHello::Status::malformed);
    }
    if (handshake.size() < 4) {
      continue;
    }
    if (static_cast<std::uint8_t>(handshake[0]) != kClientHelloType) {
      return result(ClientHello::Status::malformed);
    }
    Reader header(handshake);
    std::uint8_t handshake_type = 0;
    std::uint32_t body_length = 0;
    header.u8(handshake_type);
    header.u24(body_length);
    if (body_length > kMaxClientHello) {
      return result(ClientHello::Status::malformed);
    }
    if (handshake.size() >= 4 + body_length) {
      return parse_body(std::string_view(handshake).substr(4, body_length));
    }
  }
}

}  // namespace sandgate::rules
