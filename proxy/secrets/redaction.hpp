// Cleaning what a bound host sends back of the real values (masked_secrets.hpp's Redaction):
// each real form is replaced, in place, by its masked form of the same length, so a response's
// Content-Length and chunk sizes stay true. A body comes in pieces; a form may straddle two, so
// the last bytes of each piece wait for the next (StreamRedaction).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "proxy/secrets/masked_secrets.hpp"

namespace sandgate::secrets {

// Replaces every real form in data[0, size); returns how many were replaced.
std::size_t redact(char* data, std::size_t size, const std::vector<Redaction>& redactions);
// The same on a string (a header field's value).
std::size_t redact(std::string& text, const std::vector<Redaction>& redactions);

// One body's redaction across its pieces. The caller keeps a buffer of carry() + its piece size:
// the bytes held back from the last piece sit at its front, the new piece is read after them.
class StreamRedaction {
 public:
  explicit StreamRedaction(const std::vector<Redaction>& redactions);

  // How many bytes may be held back at most: one less than the longest real form.
  std::size_t carry_limit() const { return carry_limit_; }
  // How many bytes from the last pass wait at the front of the buffer.
  std::size_t carried() const { return carried_; }

  // `data` holds carried() held-back bytes and then `fresh` new ones. Redacts them all and
  // returns how many from the front may be sent now; the rest (none when `last`) are moved to
  // the front and wait for the next piece.
  std::size_t pass(char* data, std::size_t fresh, bool last);
  // After the caller sent what pass() allowed: puts the held-back bytes at the buffer's front.
  void held_back_to_front(char* data);
  std::size_t replaced() const { return replaced_; }

 private:
  const std::vector<Redaction>& redactions_;
  std::size_t carry_limit_ = 0;
  std::size_t carried_ = 0;
  std::size_t replaced_ = 0;
  // The bytes to move to the front once the caller has sent the rest (see pass()).
  std::string held_;
};

}  // namespace sandgate::secrets
