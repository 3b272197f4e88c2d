// Loading the secrets and making their sentinels. See masked_secrets.hpp.
#include "proxy/secrets/masked_secrets.hpp"

#include <openssl/rand.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <tuple>

#include "proxy/secrets/echo_spellings.hpp"
#include "rules/ascii.hpp"
#include "rules/base64.hpp"

namespace sandgate::secrets {
namespace {

// What a value may be at most: larger is no credential.
constexpr std::size_t kMaxValue = 4 * 1024;
constexpr std::size_t kMinLength = 8;
constexpr double kMinBits = 40;

using rules::is_ascii_alnum;
using rules::is_ascii_digit;
using rules::is_ascii_lower;
using rules::is_ascii_upper;

std::string trim_line_break(std::string text) {
  if (text.ends_with('\n')) {
    text.pop_back();
    if (text.ends_with('\r')) {
      text.pop_back();
    }
  }
  return text;
}

Expected<std::string, std::string> read_value(const SecretSpec& spec,
                                              const MaskedSecrets::Lookup& environment) {
  const std::string who = "secret " + spec.name;
  switch (spec.source) {
    case SecretSource::variable: {
      auto value = environment(spec.from);
      if (!value) {
        return Unexpected{who + ": the variable " + spec.from + " is not set"};
      }
      return *value;
    }
    case SecretSource::file: {
      std::ifstream in(spec.from, std::ios::binary);
      if (!in) {
        return Unexpected{who + ": cannot read " + spec.from + ": " + std::strerror(errno)};
      }
      std::string text;
      text.resize(kMaxValue + 1);
      in.read(text.data(), static_cast<std::streamsize>(text.size()));
      text.resize(static_cast<std::size_t>(in.gcount()));
      if (text.size() > kMaxValue) {
        return Unexpected{who + ": " + spec.from + " is larger than 4 KiB"};
      }
      return trim_line_break(std::move(text));
    }
    case SecretSource::command: {
      // Its standard error and input stay the terminal's: a password manager may ask.
      std::fflush(nullptr);
      FILE* pipe = ::popen(spec.from.c_str(), "r");
      if (pipe == nullptr) {
        return Unexpected{who + ": cannot run its command: " + std::strerror(errno)};
      }
      std::string text;
      char block[4096];
      std::size_t got = 0;
      while ((got = std::fread(block, 1, sizeof block, pipe)) > 0 && text.size() <= kMaxValue) {
        text.append(block, got);
      }
      const int status = ::pclose(pipe);
      if (status != 0) {
        return Unexpected{who + ": its command failed (" +
                          (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                             : std::string("killed by a signal")) +
                          ")"};
      }
      if (text.size() > kMaxValue) {
        return Unexpected{who + ": its command printed more than 4 KiB"};
      }
      return trim_line_break(std::move(text));
    }
  }
  return Unexpected{who + ": unknown source"};
}

// Nothing a request's header field cannot carry: no control character, no byte outside ASCII,
// no space at either end. `value` is not empty (the callers check).
bool header_safe(std::string_view value) {
  return std::none_of(value.begin(), value.end(),
                      [](unsigned char c) { return c < 0x20 || c >= 0x7f; }) &&
         value.front() != ' ' && value.back() != ' ';
}

std::uint8_t random_byte() {
  unsigned char byte = 0;
  if (RAND_bytes(&byte, 1) != 1) {
    std::abort();  // no randomness: nothing safe can be made
  }
  return byte;
}

}  // namespace

namespace {

// What a sentinel keeps of the value (its prefix, up to the last '_' or '-' in its first 12
// characters) and draws at random for the rest: the alphabet of the kinds of character the rest
// uses, for each of its letters and digits.
struct Drawing {
  std::size_t prefix = 0;
  std::string alphabet;
  double drawn = 0;
  double bits() const {
    return alphabet.empty() ? 0 : drawn * std::log2(static_cast<double>(alphabet.size()));
  }
};

Drawing drawing_of(std::string_view value) {
  Drawing out;
  for (std::size_t i = 0; i < std::min<std::size_t>(12, value.size()); ++i) {
    if (value[i] == '_' || value[i] == '-') {
      out.prefix = i + 1;
    }
  }
  const std::string_view rest = value.substr(std::min(out.prefix, value.size()));
  if (std::any_of(rest.begin(), rest.end(), is_ascii_lower)) {
    out.alphabet += "abcdefghijklmnopqrstuvwxyz";
  }
  if (std::any_of(rest.begin(), rest.end(), is_ascii_upper)) {
    out.alphabet += "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  }
  if (std::any_of(rest.begin(), rest.end(), is_ascii_digit)) {
    out.alphabet += "0123456789";
  }
  out.drawn = static_cast<double>(std::count_if(rest.begin(), rest.end(), is_ascii_alnum));
  return out;
}

}  // namespace

std::string make_sentinel(std::string_view value,
                          const std::function<std::uint8_t()>& random_byte) {
  if (value.size() < kMinLength) {
    return {};
  }
  const Drawing drawing = drawing_of(value);
  const std::size_t prefix = drawing.prefix;
  const std::string& alphabet = drawing.alphabet;
  if (alphabet.empty() || drawing.bits() < kMinBits) {
    return {};
  }
  // Rejection sampling: only bytes below the largest multiple of the alphabet's size.
  const unsigned limit = 256 - 256 % alphabet.size();
  std::string sentinel(value);
  for (std::size_t i = prefix; i < sentinel.size(); ++i) {
    if (!is_ascii_alnum(sentinel[i])) {
      continue;
    }
    unsigned byte = random_byte();
    while (byte >= limit) {
      byte = random_byte();
    }
    sentinel[i] = alphabet[byte % alphabet.size()];
  }
  return sentinel;
}

namespace {

// Base64 at each alignment: the value's bytes after `skip` bytes of something else, padded to
// whole groups of three. Every character whose six bits touch the value is part of the form;
// the first and last may hold bits of the neighbours too (head_bits, tail_bits).
void base64_forms(std::string_view value, std::string_view sentinel, std::vector<Redaction>& out) {
  // Base64 at each alignment: the value's bytes after `skip` bytes of something else, padded to
  // whole groups of three. Every character whose six bits touch the value is part of the form;
  // the first and last may hold bits of the neighbours too (head_bits, tail_bits).
  for (std::size_t skip = 0; skip < 3; ++skip) {
    const std::size_t bytes = skip + value.size();
    const std::size_t padded = (bytes + 2) / 3 * 3;
    std::string real(skip, '\0');
    std::string masked(skip, '\0');
    real.append(value);
    masked.append(sentinel);
    real.resize(padded, '\0');
    masked.resize(padded, '\0');
    const std::size_t first_bit = 8 * skip;
    const std::size_t end_bit = 8 * bytes;  // one past the value's last bit
    const std::size_t first = first_bit / 6;
    const std::size_t last = (end_bit - 1) / 6;
    const unsigned head_value_bits =
        static_cast<unsigned>(std::min<std::size_t>(6, 6 * first + 6 - first_bit));
    const unsigned tail_value_bits = static_cast<unsigned>(end_bit - 6 * last);
    for (const bool url_safe : {false, true}) {
      Redaction form;
      form.real = rules::base64_encoded(real, url_safe).substr(first, last - first + 1);
      form.masked = rules::base64_encoded(masked, url_safe).substr(first, last - first + 1);
      form.url_safe = url_safe;
      form.base64 = true;
      form.head_bits = static_cast<unsigned char>((1u << head_value_bits) - 1);
      form.tail_bits =
          static_cast<unsigned char>(((1u << tail_value_bits) - 1) << (6 - tail_value_bits));
      if (form.real.size() >= kMinLength && form.real != form.masked) {
        out.push_back(std::move(form));
      }
    }
  }
}

// Each byte of `text` in hexadecimal (`digits`), after `marker` ("" for plain hexadecimal).
std::string hex_of(std::string_view text, const char* digits, std::string_view marker) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    out += marker;
    out += digits[byte >> 4];
    out += digits[byte & 15];
  }
  return out;
}

// Each byte of `text` in `base` (10 or 8), zero-padded to `width` digits, after `marker`.
std::string number_of(std::string_view text, int base, int width, std::string_view marker) {
  std::string out;
  for (const char c : text) {
    std::string number;
    for (unsigned byte = static_cast<unsigned char>(c); number.empty() || byte > 0;
         byte /= static_cast<unsigned>(base)) {
      number.insert(number.begin(), static_cast<char>('0' + byte % static_cast<unsigned>(base)));
    }
    if (static_cast<int>(number.size()) < width) {
      number.insert(0, static_cast<std::size_t>(width) - number.size(), '0');
    }
    out += marker;
    out += number;
  }
  return out;
}

// Marks `forms` as one set, made now and never changed after (Redaction::set); and makes the
// spellings a body is searched for their echoes in (echo_spellings.hpp), now rather than while a
// body is relayed.
void stamp(std::vector<Redaction>& forms) {
  make_echo_spellings();
  static std::atomic<std::uint64_t> sets{0};
  const std::uint64_t set = ++sets;
  for (auto& form : forms) {
    form.set = set;
  }
}

// The letters and digits of `form` (see Redaction::skeleton).
void make_skeleton(Redaction& form) {
  // A form of letters and digits alone is found whole by the separated view (redaction.hpp); not
  // a base64 one, whose first and last characters may share bits with its neighbours, which only
  // the search in the data itself rewrites.
  form.view_only = form.view_only || (!form.base64 && std::all_of(form.real.begin(),
                                                                  form.real.end(), is_ascii_alnum));
  const bool mixed_head = form.base64 && form.head_bits != 0x3f;
  const bool mixed_tail = form.base64 && form.tail_bits != 0x3f;
  const std::size_t to = form.real.size() - (mixed_tail ? 1 : 0);
  for (std::size_t i = mixed_head ? 1 : 0; i < to; ++i) {
    if (is_ascii_alnum(form.real[i])) {
      form.skeleton += form.real[i];
      form.masked_skeleton += form.masked[i];
    }
  }
}

}  // namespace

std::vector<Redaction> redactions_of(std::string_view value, std::string_view sentinel) {
  std::vector<Redaction> out;
  if (sentinel.size() != value.size()) {
    // Never from make_sentinel(); a caller's own pair (MaskedSecrets::with) must keep it too:
    // each masked form replaces its real one in place.
    std::abort();
  }
  Redaction plain;
  plain.real = std::string(value);
  plain.masked = std::string(sentinel);
  out.push_back(std::move(plain));
  // Hexadecimal, either case: as it is, and as each byte is written with a marker of its own
  // (`\x67`, `0x67`, `&#x67;`, `\u0067`), which only ever stands with separators between bytes.
  // Letters and digits alone: looked for in the separated view only, which finds them either way.
  // Markers: `\x67`, `&#x67;` and `0x67` (`x`), `&#X67;` and `0X67` (`X`), `\u0067` (`u00`),
  // `\u{67}` (`u`), `U+0067` (`U00`), `\U00000067` (`U000000`).
  for (const char* digits : {"0123456789abcdef", "0123456789ABCDEF"}) {
    for (const char* marker : {"", "x", "X", "0x", "0X", "u00", "u", "U00", "U000000"}) {
      Redaction hex;
      hex.real = hex_of(value, digits, marker);
      hex.masked = hex_of(sentinel, digits, marker);
      hex.view_only = true;
      out.push_back(std::move(hex));
    }
  }
  // Each byte in decimal (a byte array: `[103, 104, 112, ...]`), also zero-padded to 3 or 4
  // digits, or after a `0` (`&#0103;`, `&#095;`), and in octal (`\147\150`). A sentinel's bytes
  // have other lengths in decimal: the masked form is the sentinel's digits, repeated to the
  // same length.
  for (const auto& [base, width, marker] :
       {std::tuple{10, 0, ""}, std::tuple{10, 3, ""}, std::tuple{10, 4, ""}, std::tuple{10, 0, "0"},
        std::tuple{8, 3, ""}}) {
    Redaction decimal;
    decimal.real = number_of(value, base, width, marker);
    const std::string digits = number_of(sentinel, base, width, marker);
    for (std::size_t i = 0; i < decimal.real.size(); ++i) {
      decimal.masked += digits[i % digits.size()];
    }
    decimal.view_only = true;
    if (decimal.masked != decimal.real) {
      out.push_back(std::move(decimal));
    }
  }
  // The value as JSON writes it inside a string (`\/`, `\"`, `\\`), which is what a base64
  // encoding of a JSON document holds.
  const auto json = [](std::string_view text) {
    std::string escaped;
    for (const char c : text) {
      if (c == '/' || c == '"' || c == '\\') {
        escaped += '\\';
      }
      escaped += c;
    }
    return escaped;
  };
  std::vector<std::pair<std::string, std::string>> encoded = {
      {std::string(value), std::string(sentinel)}};
  if (json(value) != value) {
    encoded.emplace_back(json(value), json(sentinel));
  }
  for (const auto& [plain, masked_plain] : encoded) {
    base64_forms(plain, masked_plain, out);
  }
  stamp(out);
  // What each form's characters tell of the secret (Redaction::bits_per_char).
  const Drawing drawing = drawing_of(value);
  for (auto& form : out) {
    make_skeleton(form);
    form.secret_bits = drawing.bits();
    if (form.base64) {
      form.bits_per_char = 6;
    } else if (form.real.size() == value.size()) {
      form.bits_per_char =
          drawing.alphabet.empty() ? 0 : std::log2(static_cast<double>(drawing.alphabet.size()));
    } else if (form.view_only && std::all_of(form.real.begin(), form.real.end(), is_ascii_digit)) {
      form.bits_per_char = std::log2(10.0);  // decimal
    } else {
      form.bits_per_char = 4;  // hexadecimal, with or without its markers
    }
  }
  return out;
}

MaskedSecrets::MaskedSecrets(std::vector<MaskedSecret> secrets) : secrets_(std::move(secrets)) {
  for (const auto& secret : secrets_) {
    for (auto& redaction : redactions_of(secret.value, secret.sentinel)) {
      redactions_.push_back(std::move(redaction));
    }
  }
  // Longest first: a longer form that contains a shorter one is replaced whole.
  std::stable_sort(
      redactions_.begin(), redactions_.end(),
      [](const Redaction& a, const Redaction& b) { return a.real.size() > b.real.size(); });
  stamp(redactions_);
}

std::shared_ptr<const MaskedSecrets> MaskedSecrets::with(std::vector<MaskedSecret> secrets) {
  return std::shared_ptr<const MaskedSecrets>(new MaskedSecrets(std::move(secrets)));
}

bool can_mask(std::string_view value) {
  return !value.empty() && header_safe(value) &&
         !make_sentinel(value, [] { return std::uint8_t{0}; }).empty();
}

Expected<std::shared_ptr<const MaskedSecrets>, std::string> MaskedSecrets::load(
    const std::vector<SecretSpec>& specs, const Lookup& environment,
    const SentinelKey* stable_key) {
  std::vector<MaskedSecret> secrets;
  for (const auto& spec : specs) {
    if (std::any_of(secrets.begin(), secrets.end(),
                    [&](const MaskedSecret& s) { return s.spec.name == spec.name; })) {
      return Unexpected{"secret " + spec.name + " is given twice"};
    }
    auto value = read_value(spec, environment);
    if (!value) {
      return Unexpected{value.error()};
    }
    if (value->empty()) {
      return Unexpected{"secret " + spec.name + " is empty"};
    }
    if (!header_safe(*value)) {
      return Unexpected{"secret " + spec.name +
                        " holds a control character, a byte outside ASCII or a leading or "
                        "trailing space: it cannot go in a request's header field"};
    }
    std::string sentinel;
    std::optional<StableSentinelBytes> stable;
    if (stable_key != nullptr) {
      stable.emplace(*stable_key, spec.name, *value);
    }
    const std::function<std::uint8_t()> draw = [&stable]() {
      return stable ? (*stable)() : random_byte();
    };
    for (int attempt = 0; attempt < 8 && (sentinel.empty() || sentinel == *value); ++attempt) {
      sentinel = make_sentinel(*value, draw);
    }
    if (sentinel.empty()) {
      return Unexpected{"secret " + spec.name +
                        " is too short or too plain to mask: a sentinel of its shape would be "
                        "guessable (at least 8 characters and 40 bits of letters and digits)"};
    }
    secrets.push_back({spec, std::move(*value), std::move(sentinel)});
  }
  return with(std::move(secrets));
}

const MaskedSecret* MaskedSecrets::sentinel_in(std::string_view text) const {
  for (const auto& secret : secrets_) {
    if (text.size() >= secret.sentinel.size() &&
        ::memmem(text.data(), text.size(), secret.sentinel.data(), secret.sentinel.size()) !=
            nullptr) {
      return &secret;
    }
  }
  return nullptr;
}

bool MaskedSecrets::any_bound_to(std::string_view host) const {
  return std::any_of(secrets_.begin(), secrets_.end(),
                     [&](const MaskedSecret& s) { return secret_bound_to(s.spec, host); });
}

}  // namespace sandgate::secrets
