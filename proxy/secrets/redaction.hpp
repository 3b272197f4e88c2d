// Cleaning what a bound host sends back of the real values (masked_secrets.hpp's Redaction):
// each real form is replaced, in place, by its masked form of the same length, so a response's
// Content-Length and chunk sizes stay true. A body comes in pieces; a form may straddle two, so
// the last bytes of each piece wait for the next (StreamRedaction).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/secrets/masked_secrets.hpp"

namespace sandgate::secrets {

// Replaces every real form in data[0, size); returns how many were replaced.
std::size_t redact(char* data, std::size_t size, const std::vector<Redaction>& redactions);
// The same on a string (a header field's value).
std::size_t redact(std::string& text, const std::vector<Redaction>& redactions);

// One body's redaction across its pieces, as the pieces come: what is sent at once is all of a
// piece but the tail that could still become a form's echo (the longest suffix that begins one,
// in any spelling or with separators between its characters, and a trailing run of letters and
// digits), so a streamed reply (server-sent events, a chunk a token) reaches the client as it
// streams. The caller keeps a buffer of front_limit() + its piece size: at its front wait the
// bytes held back and, before them, the last bytes already sent, kept so that a form that began
// in them is still found whole when it ends in the next piece.
//
// What is held back: a form's beginning once it holds kPauseHold letters or digits (a shorter
// one goes at once: a piece ending in `7}` when a form begins `73` is no reason to wait, and if
// it was an echo after all, the next piece finds it in the context and holds the rest, so at most
// a form's first kPauseHold - 1 characters go uncleaned); and a trailing run of letters and
// digits, which may go on as one of a form's long runs. When the origin pauses, on_pause() lets
// the trailing run go unless it ends in kPauseHold or more characters that begin such a run: an
// idle stream is not frozen by a word cut in two.
class StreamRedaction {
 public:
  // A held-back tail that begins a form for this many letters or digits waits through pauses.
  static constexpr std::size_t kPauseHold = 4;

  explicit StreamRedaction(const std::vector<Redaction>& redactions);

  // How many bytes may wait at the buffer's front at most (held back, and sent kept as context).
  std::size_t front_limit() const { return 2 * carry_limit_; }
  // How many bytes from the last pass wait at the front of the buffer.
  std::size_t carried() const { return carried_; }
  // How many of them have not been sent.
  std::size_t held() const { return size_ - sent_; }

  // Bytes of the buffer that may be sent now.
  struct Ready {
    std::size_t from = 0;
    std::size_t size = 0;
  };
  // `data` holds carried() bytes and then `fresh` new ones. Cleans them all and returns what may
  // be sent now: everything unsent when `last`.
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

  const std::vector<Redaction>& redactions_;
  std::size_t carry_limit_ = 0;
  std::size_t carried_ = 0;
  std::size_t size_ = 0;  // bytes in the buffer after the last pass
  std::size_t sent_ = 0;  // of them, sent (or given to the caller to send)
  bool strong_ = false;   // the held tail begins a form for kPauseHold letters or digits or more
  std::vector<std::string_view> long_runs_;  // the forms' runs that are replaced on their own
  std::array<bool, 256> may_begin_{};        // the bytes a form's beginning may start with
  std::size_t replaced_ = 0;
};

}  // namespace sandgate::secrets
