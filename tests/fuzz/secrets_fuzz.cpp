// Fuzz target: what a confined command controls of the masked-secrets path (proxy/secrets/).
//
// The input is read as a request head of its own making: the first line its target, each
// further line `name: value` (lines without a colon are skipped), after a first byte that picks
// the host (bound or not) and whether the connection counts as verified TLS. Two fixed secrets
// are bound to api.example.com; their sentinels are known to the input, as to a real command.
// Then the same bytes as a response body, with the real values put at places the input picks,
// cut into pieces of a size it picks.
// Invariants, beyond "no crash, no out-of-bounds access, no undefined behaviour":
//   - a SigV4 Authorization that parses renders back to text that parses to the same thing;
//   - a head misplaced_secret() passes, once filled, holds a real value only in a field that
//     carries credentials, only when the host is bound and the TLS verified; and no sentinel is
//     left in such a field;
//   - a body cleaned piece by piece keeps its length and holds no real value, wherever the pieces
//     break.
#include <boost/beast/http/message.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/secrets/redaction.hpp"
#include "proxy/secrets/request_secrets.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

namespace http = boost::beast::http;
using namespace sandgate;

constexpr std::string_view kToken = "ghp_RealTokenRealTokenRealToken0123456789";
constexpr std::string_view kSentinel = "ghp_SentinelSentinelSentinel9876543210XYZ";
constexpr std::string_view kKey = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
constexpr std::string_view kKeySentinel = "qwErtYUiopASD/F7GHJKL+zXcVbnmQWERTYUIOPA";

// (A sentinel has its value's length, as make_sentinel() makes it.)
static_assert(kSentinel.size() == kToken.size() && kKeySentinel.size() == kKey.size());

const secrets::MaskedSecrets& masked() {
  static const auto made = secrets::MaskedSecrets::with({
      {*secrets::parse_secret_spec("GITHUB_TOKEN=api.example.com"), std::string(kToken),
       std::string(kSentinel)},
      {*secrets::parse_secret_spec("AWS_SECRET_ACCESS_KEY=api.example.com"), std::string(kKey),
       std::string(kKeySentinel)},
  });
  return *made;
}

bool has_real(std::string_view text) {
  return text.find(kToken) != std::string_view::npos || text.find(kKey) != std::string_view::npos;
}

void check_head(std::string_view input, std::uint8_t mode) {
  http::request_header<> head;
  head.method(http::verb::get);
  std::size_t start = 0;
  bool first = true;
  while (start < input.size()) {
    const std::size_t end = std::min(input.find('\n', start), input.size());
    const std::string_view line = input.substr(start, end - start);
    start = end + 1;
    if (first) {
      head.target(line);
      first = false;
      continue;
    }
    const std::size_t colon = line.find(':');
    if (colon == 0 || colon == std::string_view::npos) {
      continue;
    }
    head.insert(line.substr(0, colon), line.substr(colon + 1));
  }
  if (auto parsed = secrets::parse_sigv4_authorization(head[http::field::authorization])) {
    auto again = secrets::parse_sigv4_authorization(secrets::render_sigv4_authorization(*parsed));
    FUZZ_CHECK(again && again->signature == parsed->signature &&
                   again->signed_headers == parsed->signed_headers &&
                   again->access_key_id == parsed->access_key_id,
               std::string(head[http::field::authorization]));
  }
  const bool bound = (mode & 1) != 0;
  const bool verified = (mode & 2) != 0;
  const std::string host = bound ? "api.example.com" : "other.example.com";
  if (secrets::misplaced_secret(masked(), head, host, verified)) {
    return;
  }
  secrets::fill_secrets(masked(), head);
  // (An input that holds a real value itself proves nothing about the gate.)
  const bool real_given = has_real(input);
  FUZZ_CHECK(!has_real(head.target()) || real_given, std::string(head.target()));
  for (const auto& field : head) {
    const std::string value(field.value());
    if (!secrets::carries_credentials(field.name_string()) || !bound || !verified) {
      FUZZ_CHECK(!has_real(value) || real_given, std::string(field.name_string()) + ": " + value);
    }
    if (secrets::carries_credentials(field.name_string()) && !field.name_string().empty()) {
      FUZZ_CHECK(value.find(kSentinel) == std::string::npos &&
                     value.find(kKeySentinel) == std::string::npos,
                 value);
    }
  }
}

// Each byte of `text` in hexadecimal with a space after it, as S3's CanonicalRequestBytes.
std::string spaced_hex(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    out += "0123456789abcdef"[byte >> 4];
    out += "0123456789abcdef"[byte & 15];
    out += ' ';
  }
  return out;
}

void check_body(std::string_view input, std::uint8_t piece_size, std::uint8_t places) {
  std::string body(input);
  // The real values, put in where the input says, and one spelled in spaced hexadecimal.
  const std::size_t at = body.empty() ? 0 : places % (body.size() + 1);
  body.insert(at, places & 1 ? kToken : kKey);
  body.insert(body.size() / 2, kToken);
  const std::string spaced = spaced_hex(kToken);
  const std::size_t spaced_at = body.size() / 3;
  if (places & 2) {
    body.insert(spaced_at, spaced);
  }
  const std::string original = body;
  const auto& redactions = masked().redactions();
  secrets::StreamRedaction redaction(redactions);
  const std::size_t piece = 1 + piece_size % 97;
  // The origin pauses after every few pieces (never, when the input's bits say so).
  const std::size_t pause_every = (places >> 2) % 8;
  std::string buffer(redaction.front_limit() + piece, '\0');
  std::string sent;
  std::size_t pieces = 0;
  for (std::size_t from = 0; from < body.size();) {
    const std::size_t fresh = std::min(piece, body.size() - from);
    body.copy(buffer.data() + redaction.carried(), fresh, from);
    from += fresh;
    const auto ready = redaction.pass(buffer.data(), fresh, from == body.size());
    sent.append(buffer.data() + ready.from, ready.size);
    if (pause_every > 0 && ++pieces % pause_every == 0 && from < body.size()) {
      const auto released = redaction.on_pause();
      sent.append(buffer.data() + released.from, released.size);
    }
    redaction.to_front(buffer.data());
  }
  FUZZ_CHECK(sent.size() == original.size(), std::to_string(sent.size()));
  FUZZ_CHECK(!has_real(sent), sent);
  // The spaced echo is cleaned but for its first 40 bits of the secret at most (a pause may cut
  // it there; redaction.hpp): its last 16 bytes never go as they came. (A piece of the value the
  // input spells itself is no form, and is not cleaned.)
  if (places & 2) {
    const std::size_t tail = spaced.size() - 3 * 16;
    FUZZ_CHECK(sent.compare(spaced_at + tail, 3 * 16, spaced, tail, 3 * 16) != 0, sent);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) {
    return 0;
  }
  const std::string_view input(reinterpret_cast<const char*>(data) + 3, size - 3);
  check_head(input, data[0]);
  check_body(input, data[1], data[2]);
  return 0;
}
