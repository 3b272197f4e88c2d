// The refusal told in-band, as ssh itself reports it. ssh reads the ProxyCommand's standard
// output as the server's stream, so when the proxy refuses, sandgate-connect writes an SSH
// identification line and then an unencrypted SSH_MSG_DISCONNECT (RFC 4253 sections 4.2, 6 and
// 11.1) carrying the refusal. OpenSSH prints a disconnect it receives, before key exchange
// too, as
//   Received disconnect from UNKNOWN port 65535:1: <description>
// (its packet.c; at most 400 characters of it, non-printable bytes escaped), so the person or
// agent running ssh or git sees the gate's reason where ssh's own error would otherwise be the
// unhelpful "Connection closed by UNKNOWN port 65535".
//
// ssh_disconnect_stream is pure; deliver_disconnect does the I/O. Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sandgate::connect_proxy {

// RFC 4253 section 11.1 reason codes used here.
enum class DisconnectReason : std::uint32_t {
  // The gate's policy (or its token check) does not let this client reach the destination.
  host_not_allowed_to_connect = 1,
  // The gate could not reach the destination, or answered in a way that is not a refusal.
  service_not_available = 7,
};

// The reason for a proxy's answer with HTTP `status` (not 200).
DisconnectReason disconnect_reason_for(int status);

// What OpenSSH shows of a description (`%.400s` in packet.c): longer text is cut there.
inline constexpr std::size_t kMaxDisconnectDescription = 400;

// The identification line (`SSH-2.0-sandgate-connect\r\n`) followed by one binary packet
// (uint32 packet_length, byte padding_length, payload, random-free zero padding of 4 or more
// bytes so that the whole packet is a multiple of 8, no MAC) whose payload is
//   byte SSH_MSG_DISCONNECT (1), uint32 reason, string description, string language tag ("").
// `description` is made one printable line (controls become '?') and cut at
// kMaxDisconnectDescription bytes (never inside a UTF-8 sequence).
std::string ssh_disconnect_stream(std::string_view description, DisconnectReason reason);

// Writes `stream` to `out` (ssh's end of the pipe), then reads and discards what ssh sends on
// `in` until ssh closes it or `linger` has passed: ssh writes its own identification and key
// exchange offer meanwhile, and a pipe closed under it would make ssh report "Broken pipe"
// instead of the disconnect it has yet to read. Blocking; EINTR is retried. Returns false when
// the write failed (ssh is gone).
bool deliver_disconnect(int out, int in, std::string_view stream, std::chrono::milliseconds linger);

}  // namespace sandgate::connect_proxy
