// Sentinels that stay the same from run to run (--stable-sentinels). An agent that remembers an
// approved key by its value (Claude Code keeps the tail of each key it was told to use) asks
// again in every run when the sentinel is new each time. With a key of the user's, kept outside
// every sandbox, the sentinel is drawn from HMAC-SHA256 of the secret's name and value instead of
// from the random source: the same name and value give the same sentinel; a new value, another
// user or a new key give another. The sentinel tells nothing of the value without the key.
//
// The price: a sentinel the command saw once stays usable, through the gate, on the secret's
// hosts in every later run until the value or the key changes (delete the key file to change
// every sentinel); and runs can be told apart as the same user's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "rules/expected.hpp"

namespace sandgate::secrets {

inline constexpr std::size_t kSentinelKeyBytes = 32;
using SentinelKey = std::array<std::uint8_t, kSentinelKeyBytes>;

// The user's sentinel key in `path`: read, or made (random bytes, mode 0600, created
// exclusively, so two gates starting at once agree on one) when there is none. Refuses a link,
// a file owned by another user or open to others, and one of another size; the error names the
// path and what is wrong.
Expected<SentinelKey, std::string> load_or_make_sentinel_key(const std::string& path);

// The bytes make_sentinel() draws for one secret: HMAC-SHA256(key, label, name, value) in
// counter mode, as many as it asks for. Deterministic; not thread-safe (one per secret).
class StableSentinelBytes {
 public:
  StableSentinelBytes(const SentinelKey& key, std::string_view name, std::string_view value);
  ~StableSentinelBytes();  // wipes what it held of the key and the value
  StableSentinelBytes(const StableSentinelBytes&) = delete;
  StableSentinelBytes& operator=(const StableSentinelBytes&) = delete;
  std::uint8_t operator()();

 private:
  void refill();

  SentinelKey key_;
  std::string message_;  // label, name and value, each length-prefixed
  std::uint32_t counter_ = 0;
  std::array<std::uint8_t, 32> block_{};
  std::size_t used_ = 32;
};

}  // namespace sandgate::secrets
