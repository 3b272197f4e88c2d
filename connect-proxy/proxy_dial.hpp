// Opening the tunnel: a TCP connection to the proxy, `CONNECT host:port`, and the proxy's
// response head read up to its blank line. Blocking calls with one deadline for the whole
// set-up; plain POSIX sockets and poll(2), so the helper starts in a millisecond.
//
// Not thread-safe (one tunnel per process); EINTR is retried.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "connect-proxy/connect_request.hpp"
#include "connect-proxy/proxy_location.hpp"
#include "connect-proxy/unique_fd.hpp"
#include "rules/expected.hpp"

namespace sandgate::connect_proxy {

struct Tunnel {
  UniqueFd socket;  // connected to the proxy, tunnel established, non-blocking
  // Bytes that arrived after the response head in the same reads: the server's first bytes
  // (an SSH banner), to be delivered before anything else.
  std::string early_bytes;
};

// Connects to `proxy` (each address its name resolves to, in order), asks for a tunnel to
// `authority` and requires status 200. On failure the error is one line (without the program
// prefix) naming the proxy address and, for a refusal, the proxy's reason code and sentence.
// `refusal`: when given, set to the proxy's response head when it answered with a status other
// than 200 (the gate refused, or could not reach the destination), left empty otherwise.
Expected<Tunnel, std::string> open_tunnel(const ProxyLocation& proxy, std::string_view authority,
                                          std::chrono::milliseconds timeout,
                                          std::optional<ResponseHead>* refusal = nullptr);

}  // namespace sandgate::connect_proxy
