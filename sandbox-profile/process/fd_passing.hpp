// Passing a descriptor and a short text between the confined child and `run` over a unix
// socket pair (SCM_RIGHTS). Messages are SOCK_SEQPACKET records: one call, one message. And the
// loopback sockets both sides make to hand over (the gate's listener, the forwarded ports).
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>

#include "rules/expected.hpp"

namespace sandgate::sandbox {

// Sends `text` and, when `fd` >= 0, a duplicate of `fd`. The error names the call and errno.
Expected<bool, std::string> send_message(int socket, const std::string& text, int fd = -1);

struct Message {
  std::string text;
  int fd = -1;          // received descriptor (close-on-exec), or -1 if none came with the text
  bool closed = false;  // the other end closed without sending anything
};

// Receives one message (up to 64 KiB of text), waiting for it.
Expected<Message, std::string> receive_message(int socket);

// 127.0.0.1:`port`, as connect() and bind() take it.
sockaddr_in loopback_address(std::uint16_t port);

// A TCP socket listening on 127.0.0.1:`port` (0: the kernel picks one) in the calling thread's
// network namespace; close-on-exec. The error names the step and errno.
Expected<int, std::string> open_loopback_listener(std::uint16_t port = 0);

}  // namespace sandgate::sandbox
