// The SSH disconnect that carries a refusal. See ssh_disconnect.hpp.
#include "connect-proxy/ssh_disconnect.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace sandgate::connect_proxy {
namespace {

constexpr unsigned char kMsgDisconnect = 1;  // RFC 4253 section 12
// Before key exchange the cipher is "none", whose block size is 8 (RFC 4253 section 6).
constexpr std::size_t kBlock = 8;
constexpr std::size_t kMinPadding = 4;

void put_u32(std::string& out, std::uint32_t value) {
  out += static_cast<char>((value >> 24) & 0xff);
  out += static_cast<char>((value >> 16) & 0xff);
  out += static_cast<char>((value >> 8) & 0xff);
  out += static_cast<char>(value & 0xff);
}

void put_string(std::string& out, std::string_view text) {
  put_u32(out, static_cast<std::uint32_t>(text.size()));
  out += text;
}

// One line, printable: controls (and DEL) become '?'; bytes >= 0x80 are kept (UTF-8), but the
// cut never splits a sequence.
std::string one_line(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    out += (byte < 0x20 || byte == 0x7f) ? '?' : c;
  }
  if (out.size() > kMaxDisconnectDescription) {
    std::size_t cut = kMaxDisconnectDescription;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xc0) == 0x80) {
      --cut;  // out[cut] continues a sequence: cut before its lead byte
    }
    out.resize(cut);
  }
  return out;
}

}  // namespace

DisconnectReason disconnect_reason_for(int status) {
  return status == 403 || status == 407 ? DisconnectReason::host_not_allowed_to_connect
                                        : DisconnectReason::service_not_available;
}

std::string ssh_disconnect_stream(std::string_view description, DisconnectReason reason) {
  std::string payload;
  payload += static_cast<char>(kMsgDisconnect);
  put_u32(payload, static_cast<std::uint32_t>(reason));
  put_string(payload, one_line(description));
  put_string(payload, "");  // language tag
  // packet_length (4) + padding_length (1) + payload + padding is a multiple of the block.
  std::size_t padding = kBlock - (4 + 1 + payload.size()) % kBlock;
  if (padding < kMinPadding) {
    padding += kBlock;
  }
  std::string out = "SSH-2.0-sandgate-connect\r\n";
  put_u32(out, static_cast<std::uint32_t>(1 + payload.size() + padding));
  out += static_cast<char>(padding);
  out += payload;
  out.append(padding, '\0');
  return out;
}

bool deliver_disconnect(int out, int in, std::string_view stream,
                        std::chrono::milliseconds linger) {
  while (!stream.empty()) {
    const ssize_t n = ::write(out, stream.data(), stream.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd writable{out, POLLOUT, 0};
      if (::poll(&writable, 1, static_cast<int>(linger.count())) <= 0) {
        return false;
      }
      continue;
    }
    if (n <= 0) {
      return false;
    }
    stream.remove_prefix(static_cast<std::size_t>(n));
  }
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + linger;
  char sink[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      return true;
    }
    pollfd readable{in, POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready <= 0) {
      return true;
    }
    const ssize_t n = ::read(in, sink, sizeof sink);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) {
      continue;
    }
    if (n <= 0) {
      return true;  // ssh closed its end: it has read the disconnect (or gave up)
    }
  }
}

}  // namespace sandgate::connect_proxy
