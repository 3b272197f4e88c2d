// Cleaning what a bound host sends back of the real values (masked_secrets.hpp's Redaction):
// each real form is replaced, in place, by its masked form of the same length, so a response's
// Content-Length and chunk sizes stay true. A body comes in pieces; a form may straddle two, so
// the last bytes of each piece wait for the next (StreamRedaction).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/secrets/masked_secrets.hpp"

namespace sandgate::secrets {

// Replaces every real form in data[0, size); returns how many were replaced.
std::size_t redact(char* data, std::size_t size, const std::vector<Redaction>& redactions);
// The same on a string (a header field's value).
std::size_t redact(std::string& text, const std::vector<Redaction>& redactions);

// One body's redaction across its pieces, as the pieces come: what is sent at once is all of a
// piece but a tail that may still become an echo. The caller keeps a buffer of front_limit() +
// its piece size: at its front wait the bytes held back and, before them, the last bytes already
// sent, kept so that an echo that began in them is still found whole when it ends.
//
// What is held back, so that a streamed reply (server-sent events, a chunk a token) reaches the
// client as it streams:
//   - a trailing run of letters and digits (a word the piece cut), which may go on as one of a
//     form's long runs; it also goes when the origin pauses (on_pause());
//   - the beginning of a form, in any spelling or with separators, once it spells kHoldBits of
//     the secret: it waits, through pauses, until the echo is whole and cleaned, turns out to be
//     none, or the body ends (then what there is of it is cleaned).
// A beginning worth less is not held: whether the gate holds a tail must not tell a client that
// its guess of a secret's first characters is right (it could time a streamed echo of its
// guesses), and a guess worth kHoldBits is out of reach. The cost: an echo cut by a piece's end
// or a pause lets out at most the first kHoldBits of the secret it spells.
// Every hold stays within the window (carry_limit) the buffer is sized for.
//
// A secret of under kStreamingSecretBits (in its random part) cannot spare kHoldBits: while one
// is bound, a fixed window of every piece waits for the next one, whatever it holds, as before
// replies streamed.
class StreamRedaction {
 public:
  // What a beginning must spell of a secret before it is held (2^40 guesses).
  static constexpr double kHoldBits = 40;
  // The least a secret's random part must hold for its replies to stream.
  static constexpr double kStreamingSecretBits = 128;

  explicit StreamRedaction(const std::vector<Redaction>& redactions);

  // How many bytes may wait at the buffer's front at most (held back, and sent kept as context).
  std::size_t front_limit() const { return 2 * carry_limit_; }
  // How many bytes from the last pass wait at the front of the buffer.
  std::size_t carried() const { return carried_; }
  // How many of them have not been sent.
  std::size_t held() const { return size_ - sent_; }
  // Whether replies stream (no secret shorter than kStreamingSecretBits).
  bool streams() const { return streams_; }

  // Bytes of the buffer that may be sent now.
  struct Ready {
    std::size_t from = 0;
    std::size_t size = 0;
  };
  // `data` holds carried() bytes and then `fresh` new ones (carried() + fresh <= front_limit() +
  // the caller's piece size). Cleans them all and returns what may be sent now: everything unsent
  // when `last`.
  Ready pass(char* data, std::size_t fresh, bool last);
  // The origin paused: the held bytes that may be sent now (see above).
  Ready on_pause();
  // After the caller sent what pass() or on_pause() allowed: moves what must wait, and the
  // context, to the buffer's front.
  void to_front(char* data);
  std::size_t replaced() const { return replaced_; }

 private:
  // Where the tail to hold back begins in data[0, size), and whether it waits through pauses.
  std::size_t hold_from(const char* data, std::size_t size);

  struct LongRun {
    const Redaction* form;
    std::size_t first;
    std::size_t length;
  };

  const std::vector<Redaction>& redactions_;
  std::size_t carry_limit_ = 0;
  std::size_t carried_ = 0;
  std::size_t size_ = 0;  // bytes in the buffer after the last pass
  std::size_t sent_ = 0;  // of them, sent (or given to the caller to send)
  bool streams_ = true;
  bool strong_ = false;  // the held tail waits through pauses
  std::size_t strong_from_ = 0;
  std::vector<std::pair<std::size_t, char>> strong_letters_;  // its letters, and their masked
  std::vector<LongRun> long_runs_;  // the forms' runs that are replaced on their own
  // A way a form's beginning may start: its skeleton (separated) or its spelling.
  struct Beginner {
    const Redaction* form;
    bool separated;
  };
  std::array<std::vector<Beginner>, 256> beginners_;  // by the first byte
  std::size_t replaced_ = 0;
};

}  // namespace sandgate::secrets
