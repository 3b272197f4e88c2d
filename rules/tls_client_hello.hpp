// Reads the server name (SNI) from the first bytes a client sends in a tunnel, without
// terminating TLS: the TLS record layer and the ClientHello handshake message only, strictly
// bounded. Also recognises an SSH client's version line, so policy can follow the protocol
// actually spoken rather than the port number.
//
// Pure function over bytes; thread-safe; never reads past `data`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sandgate::rules {

struct ClientHello {
  enum class Status : std::uint8_t {
    need_more,  // a valid prefix of a ClientHello: read more bytes and call again
    tls,        // a complete ClientHello; `server_name` holds the SNI host name, if any
    ssh,        // an SSH identification line ("SSH-2.0-...")
    other,      // neither TLS nor SSH (the first bytes already rule both out)
    malformed,  // TLS framing, but broken or oversized
  };
  Status status = Status::need_more;
  std::string server_name;  // as sent (not yet normalised); empty when absent
  // The ClientHello carries an encrypted_client_hello extension (ECH, or GREASE ECH, which
  // looks the same from outside): `server_name` is then the outer name, and the name the client
  // really asks for may be encrypted inside.
  bool encrypted_client_hello = false;
  // Its ALPN extension offers HTTP/2 ("h2"): an inspected connection may then speak it, when the
  // origin does too.
  bool offers_h2 = false;
};

// Examines the start of a client's stream. A ClientHello may span several TLS records; at most
// kMaxClientHello bytes of handshake are accepted.
ClientHello read_client_hello(std::string_view data);

inline constexpr std::size_t kMaxClientHello = 16 * 1024;

}  // namespace sandgate::rules
