// The secrets of one gate, loaded once at start: each real value, the sentinel the sandboxed
// command holds instead, and what the gate looks for on the way out and on the way back.
//
// A sentinel has the real value's length, keeps its prefix (up to the last '_' or '-' in its
// first 12 characters: `ghp_`, `github_pat_`, `sk-proj-`) and its punctuation where it is, and
// draws every other character at random from the kinds (lower case, upper case, digits) the
// value uses: a tool that checks a token's shape accepts it, and a value the gate puts back in a
// response (redaction) keeps its length, so the response's framing stays true.
//
// Immutable once loaded; shared by every worker. The real values are never written anywhere
// but into request heads to their bound hosts: not into a log, a metric or a message.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/secrets/secret_spec.hpp"
#include "proxy/secrets/stable_sentinel.hpp"
#include "rules/expected.hpp"

namespace sandgate::secrets {

// A real form of a secret and the masked form of the same length that replaces it in what a
// bound host sends back: the value itself, or its base64 encoding at one of the three alignments
// it can have in an encoded stream (standard or URL-safe alphabet). redaction.hpp finds a form in
// every spelling an echo gives its punctuation (JSON and HTML escapes, %-encoding in either
// case). A base64 form's first and last characters may also carry bits of the bytes around the
// value: `head_bits` and `tail_bits` are the bits of each (a 6-bit mask) that come from it.
struct Redaction {
  std::string real;
  std::string masked;
  bool url_safe = false;           // a base64 form in the URL-safe alphabet
  bool base64 = false;             // a base64 form (head_bits and tail_bits apply)
  unsigned char head_bits = 0x3f;  // 0x3f: the whole first character is the value's
  unsigned char tail_bits = 0x3f;
  // Looked for only in the data's letters and digits (redaction.hpp's separated view), which
  // finds it with or without anything between its characters: a form of letters and digits alone
  // (hexadecimal; each byte in hexadecimal after `x`, `0x` or `u00`, or in decimal).
  bool view_only = false;
  // The form's letters and digits (its mixed first and last base64 characters left out), and the
  // masked form's characters at the same places: what the separated search looks for and writes.
  std::string skeleton;
  std::string masked_skeleton;
  // What one of the form's letters or digits tells of the secret where it differs from the
  // masked form's (log2 of the alphabet it is drawn from: 6 for base64, 4 for hexadecimal), and
  // what the secret's random part holds in all (StreamRedaction decides what to hold by them).
  double bits_per_char = 4;
  double secret_bits = 0;
  // The set of forms it was made with (redactions_of(), a gate's secrets), never changed after:
  // what is worked out once per set (redaction.cpp's search) is kept by this stamp. 0: unstamped.
  std::uint64_t set = 0;
};

struct MaskedSecret {
  SecretSpec spec;
  std::string value;     // the real one
  std::string sentinel;  // what the command holds
};

class MaskedSecrets {
 public:
  // Reads the environment as the process has it.
  using Lookup = std::function<std::optional<std::string>(const std::string& name)>;

  // Reads each value (a variable, a file, a command's output; one trailing line break taken
  // off) and makes its sentinel: at random, or with `stable_key` drawn from it
  // (stable_sentinel.hpp), the same for the same name and value. The error names the secret and
  // what failed, never a value.
  static Expected<std::shared_ptr<const MaskedSecrets>, std::string> load(
      const std::vector<SecretSpec>& specs, const Lookup& environment,
      const SentinelKey* stable_key = nullptr);

  // For tests: a secret with a given sentinel.
  static std::shared_ptr<const MaskedSecrets> with(std::vector<MaskedSecret> secrets);

  const std::vector<MaskedSecret>& all() const { return secrets_; }
  bool empty() const { return secrets_.empty(); }

  // The first secret whose sentinel occurs in `text`, or null.
  const MaskedSecret* sentinel_in(std::string_view text) const;
  // Whether any secret is bound to `host` (normal form).
  bool any_bound_to(std::string_view host) const;
  // What the responses of a host some secret is bound to are cleaned of: every form of every
  // secret (a value stored by one bound host may come back from another).
  const std::vector<Redaction>& redactions() const { return redactions_; }

 private:
  explicit MaskedSecrets(std::vector<MaskedSecret> secrets);

  std::vector<MaskedSecret> secrets_;
  std::vector<Redaction> redactions_;
};

// A sentinel for `value`, as described above, from `random` (bytes of a CSPRNG). Empty when the
// value is too short or too plain to mask: fewer than 8 characters, or under 40 bits of choice.
std::string make_sentinel(std::string_view value, const std::function<std::uint8_t()>& random_byte);

// Whether `value` can be masked: it may go in a request's header field (no control character,
// no byte outside ASCII, no space at either end) and is long and varied enough for a sentinel
// (make_sentinel). MaskedSecrets::load refuses what fails this, naming which.
bool can_mask(std::string_view value);

// The redactions of one secret (exposed for tests).
std::vector<Redaction> redactions_of(std::string_view value, std::string_view sentinel);

}  // namespace sandgate::secrets
