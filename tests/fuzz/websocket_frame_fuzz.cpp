// Fuzz target: RFC 6455 frames as an inspected WebSocket's relay reads them
// (proxy/session/exchange/websocket_frame.hpp), and the stage that cleans an origin's payloads
// of a secret (payload_redaction.hpp), on a stream of frames a hostile side sends.
//
// The input's first byte picks the sender (client or server) and the piece size the payloads
// are fed in; the rest is read as frames, in order, as the relay reads them.
//
// Invariants, beyond "no out-of-bounds access and no undefined behaviour" (ASan, UBSan):
//   - a header read is 2..14 bytes, within the input, and written again it is the same bytes
//     (every length is in its shortest form, no reserved bit, the sender's masking);
//   - every proper prefix of a header needs more, and a refused header stays refused whatever
//     follows it (a reader that waits on need_more can never stop early or read past it);
//   - a control frame is at most 125 bytes and final; no frame or message passes its limit;
//     a continuation comes only inside a message, a new message only outside one;
//   - a close payload read back has a code an endpoint may send;
//   - a server's control frame cleaned keeps its length and never carries the secret;
//   - the server's payloads, cleaned as one stream: every frame comes out with its own header
//     and its length, the cleaned payloads have the input's length, and the secret's real
//     value never comes out.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/secrets/masked_secrets.hpp"
#include "proxy/secrets/secret_spec.hpp"
#include "proxy/session/exchange/payload_redaction.hpp"
#include "proxy/session/exchange/websocket_frame.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using namespace sandgate::session::exchange;

constexpr const char* kToken = "ghp_realrealrealrealrealrealrealreal1234";
constexpr const char* kSentinel = "ghp_SENTINELsentinelSENTINELsentinel5678";
constexpr FrameLimits kLimits{.max_frame = 4096, .max_message = 16384};

const sandgate::secrets::MaskedSecrets& secrets() {
  static const auto loaded = sandgate::secrets::MaskedSecrets::with(
      {{*sandgate::secrets::parse_secret_spec("GITHUB_TOKEN=api.github.com"), kToken, kSentinel}});
  return *loaded;
}

void check_header(std::string_view input, Sender sender, const HeaderRead& read) {
  for (std::size_t cut = 0; cut < std::min<std::size_t>(input.size(), 14); ++cut) {
    const HeaderRead shorter = read_frame_header(input.substr(0, cut), sender);
    if (read.status == HeaderRead::Status::ok && cut < read.header.header_size) {
      FUZZ_CHECK(shorter.status == HeaderRead::Status::need_more,
                 std::string("a header's prefix read") + ": " + std::to_string(cut));
    }
    if (shorter.status == HeaderRead::Status::refused) {
      FUZZ_CHECK(read.status == HeaderRead::Status::refused && read.error == shorter.error,
                 std::string("a refusal changed with more bytes") + ": " + std::to_string(cut));
    }
  }
  if (read.status != HeaderRead::Status::ok) {
    return;
  }
  const FrameHeader& h = read.header;
  FUZZ_CHECK(h.header_size >= 2 && h.header_size <= 14 && h.header_size <= input.size(),
             std::string("header size") + ": " + std::to_string(h.header_size));
  FUZZ_CHECK(h.reserved == 0,
             std::string("a reserved bit passed") + ": " + std::to_string(h.reserved));
  FUZZ_CHECK(h.masked == (sender == Sender::client),
             std::string("masking of the sender") + ": " + std::to_string(h.masked));
  FUZZ_CHECK(!h.control() || (h.fin && h.length <= 125),
             std::string("a control frame's shape") + ": " + std::to_string(h.length));
  const std::string again =
      encode_frame_header(h.fin, h.opcode, h.length, h.masked ? &h.mask : nullptr);
  FUZZ_CHECK(std::string_view(again) == input.substr(0, h.header_size),
             std::string("a header written again differs") + ": " + std::to_string(h.header_size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) {
    return 0;
  }
  const Sender sender = (data[0] & 1) != 0 ? Sender::client : Sender::server;
  // 1 byte to 16 KiB: a pass per byte is slow under the sanitizers, so few inputs ask for it.
  const std::size_t piece = std::size_t{1} << ((data[0] >> 1) % 15);
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);

  MessageSequence sequence(kLimits);
  PayloadRedaction redaction(secrets().redactions());
  std::string cleaned_wire;
  std::string payloads;  // the data frames' payloads as sent
  std::vector<std::uint64_t> lengths;
  bool in_message = false;
  while (!input.empty()) {
    const HeaderRead read = read_frame_header(input, sender);
    check_header(input, sender, read);
    if (read.status != HeaderRead::Status::ok) {
      break;
    }
    const FrameHeader h = read.header;
    const bool was_in_message = in_message;
    const FrameError order = sequence.accept(h);
    if (order != FrameError::none) {
      FUZZ_CHECK(h.length > kLimits.max_frame || order == FrameError::message_too_large ||
                     (h.opcode == Opcode::continuation) != was_in_message,
                 std::string("a sequence refusal without cause") + ": " +
                     std::to_string(static_cast<int>(order)));
      break;
    }
    FUZZ_CHECK(h.length <= kLimits.max_frame,
               std::string("a frame over the limit") + ": " + std::to_string(h.length));
    if (!h.control()) {
      FUZZ_CHECK((h.opcode == Opcode::continuation) == was_in_message,
                 std::string("a fragment out of its message") + ": " +
                     std::to_string(static_cast<int>(h.opcode)));
      in_message = !h.fin;
    }
    if (input.size() - h.header_size < h.length) {
      break;  // the frame's payload is cut: nothing more to read
    }
    std::string payload(input.substr(h.header_size, h.length));
    input.remove_prefix(h.header_size + h.length);
    if (h.masked) {
      apply_mask(payload.data(), payload.size(), h.mask, 0);
    }
    if (h.opcode == Opcode::close) {
      ClosePayload close;
      if (read_close_payload(payload, close) == FrameError::none && close.code) {
        const std::uint16_t c = *close.code;
        FUZZ_CHECK((c >= 1000 && c <= 1003) || (c >= 1007 && c <= 1014) || (c >= 3000 && c <= 4999),
                   std::string("a close code passed") + ": " + std::to_string(c));
      }
      continue;
    }
    if (sender != Sender::server) {
      continue;
    }
    if (h.control()) {
      // A control frame's payload is cleaned whole, apart from the data frames' stream.
      redaction.clean_control(payload);
      FUZZ_CHECK(payload.size() == h.length && payload.find(kToken) == std::string::npos,
                 std::string("a control frame kept the secret") + ": " + std::to_string(h.length));
      continue;
    }
    // The server's data frames, cleaned as the relay cleans them.
    redaction.frame_begins(encode_frame_header(h.fin, h.opcode, h.length), h.length);
    lengths.push_back(h.length);
    payloads += payload;
    if (payload.empty()) {
      redaction.pass(0, cleaned_wire);
    }
    for (std::size_t at = 0; at < payload.size(); at += piece) {
      const std::size_t n = std::min(piece, payload.size() - at);
      std::memcpy(redaction.fresh_space(), payload.data() + at, n);
      redaction.pass(n, cleaned_wire);
    }
  }
  redaction.flush(cleaned_wire);
  FUZZ_CHECK(redaction.between_frames(),
             std::string("a frame left unfinished after a flush") + ": " + std::to_string(0));

  std::string_view rest = cleaned_wire;
  std::string cleaned;
  for (const std::uint64_t length : lengths) {
    const HeaderRead read = read_frame_header(rest, Sender::server);
    FUZZ_CHECK(
        read.status == HeaderRead::Status::ok && read.header.length == length &&
            rest.size() >= read.header.header_size + length,
        std::string("a cleaned frame lost its header or length") + ": " + std::to_string(length));
    cleaned += rest.substr(read.header.header_size, length);
    rest.remove_prefix(read.header.header_size + length);
  }
  FUZZ_CHECK(rest.empty() && cleaned.size() == payloads.size(),
             std::string("cleaned bytes not in frames") + ": " + std::to_string(rest.size()));
  FUZZ_CHECK(cleaned.find(kToken) == std::string::npos,
             std::string("the secret passed") + ": " + std::to_string(cleaned.size()));
  return 0;
}
