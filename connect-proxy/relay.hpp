// The relay of sandgate-connect: stdin to the tunnel socket and the tunnel socket to stdout, with
// poll(2), until both directions have ended.
//
// Half-close each way, as SSH and git rely on: at EOF on the input the socket's send side is
// shut down (SHUT_WR) and the socket is still read; at EOF from the socket the output is closed
// (shut down first when it is a socket) and the input is still sent until its EOF.
//
// Pipes and sockets on stdin/stdout are switched to non-blocking while relaying (their original
// flags are put back before they are closed or the relay returns), so one slow side never stalls
// the other; terminals and files are left as they are. Not thread-safe; EINTR is retried.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>

namespace sandgate::connect_proxy {

// The flags of every send() of sandgate-connect's. SIGPIPE is ignored by main(); MSG_NOSIGNAL
// makes sure of it where it exists (not on macOS).
#ifdef MSG_NOSIGNAL
inline constexpr int kSendFlags = MSG_NOSIGNAL;
#else
inline constexpr int kSendFlags = 0;
#endif

struct RelayResult {
  // Set when the tunnel failed rather than ended (the connection was reset): one line for
  // stderr, without the program prefix.
  std::optional<std::string> error;
  std::uint64_t bytes_up = 0;    // input to socket
  std::uint64_t bytes_down = 0;  // socket to output, `early_bytes` included
};

// Relays until both directions are done. `early_bytes` are written to `out_fd` before anything
// read from the socket. Closes `out_fd` when the socket's direction ends; the caller closes the
// socket. `socket_fd` must be non-blocking.
RelayResult relay(int in_fd, int out_fd, int socket_fd, std::string early_bytes);

}  // namespace sandgate::connect_proxy
