// The connector of --allow-inbound-port, the half of the port forwarder (supervisor/
// port_forwarder.hpp) that lives inside the command's network namespace: a process outside cannot
// create sockets in that namespace without privileges, so the confined child forks this one to
// connect for it. It and the forwarder speak over a SOCK_SEQPACKET channel: "ID PORT" asked,
// "ok ID" with the connected socket or "refused ID" answered.
#pragma once

#include <cstdint>
#include <string_view>

namespace sandgate::sandbox {

// The child's side of an inbound connection: connects to 127.0.0.1:`port` in the child's network
// namespace when asked over `channel`, and sends the connected socket back. Runs until the
// channel closes; for a process forked inside the namespace.
[[noreturn]] void run_connector(int channel);

// "WORD NUMBER", a line of the connector's protocol, into `word` and `number`; false when it is
// not one.
bool split_word_number(std::string_view text, std::string_view& word, std::uint64_t& number);

}  // namespace sandgate::sandbox
