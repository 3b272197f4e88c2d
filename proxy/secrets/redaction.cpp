// Replacing real forms of secrets in what bound hosts send back. See redaction.hpp.
//
// A form is found wherever its letters and digits stand in order and each of its other
// characters is spelled as an echo would spell it: as itself, %-encoded (either case), JSON's
// `\"` `\\` `\/` and `\u00XX` (either case), HTML's and XML's entities (`&quot;` `&amp;` `&lt;`
// `&gt;` `&apos;`, `&#NN;`, `&#xXX;` in either case), and `+` as the space a form decoder makes
// of it. Letters and digits are replaced by the masked form's; a character spelled otherwise is
// spelled again the same way when the masked form has another character there (a base64 form)
// and the spelling has a fixed length (itself, %XX, \u00XX, &#xXX;); a spelling of another
// length is left as it is (it shows only that the value had that character there).
//
// Spellings are many more than these (double %-encoding, `\x2f`, `&sol;`, octal, ...). So every
// run of kLongRun or more letters and digits of a form is also replaced wherever it stands on its
// own, whatever surrounds it: an echo in a spelling not listed here keeps at most the value's
// punctuation and its shorter runs, never a long stretch of it.
#include "proxy/secrets/redaction.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <optional>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "proxy/secrets/echo_spellings.hpp"
#include "rules/ascii.hpp"

namespace sandgate::secrets {
namespace {

using rules::is_ascii_alnum;

// The longest spelling of one character, two layers deep: `%26%23x002F%3B`.
constexpr std::size_t kLongestSpelling = 16;

// A run of letters and digits this long is replaced on its own too (see above): a chance match in
// data that holds no secret is one in 62^8 (5e-15) per position.
constexpr std::size_t kLongRun = 8;

// How `c` (not a letter or digit) is spelled starting at `at`, if it is: the longest spelling
// that fits (`&amp;` before a literal `&`), or with `literal_first` the character itself first.
Spelling spelled(char c, const char* at, std::size_t left, bool literal_first) {
  if (literal_first && left >= 1 && *at == c) {
    return {1, Family::literal};
  }
  Spelling best;
  for (const auto& [text, family] : spellings_of(c)) {
    if (text.size() > best.length && left >= text.size() &&
        std::memcmp(at, text.data(), text.size()) == 0) {
      best = {text.size(), family};
    }
  }
  return best;
}

// How `c` is spelled ending just before `end` (data[0, end)), if it is: the longest spelling.
Spelling spelled_before(char c, const char* data, std::size_t end) {
  Spelling best;
  for (const auto& [text, family] : spellings_of(c)) {
    if (text.size() > best.length && end >= text.size() &&
        std::memcmp(data + end - text.size(), text.data(), text.size()) == 0) {
      best = {text.size(), family};
    }
  }
  return best;
}

// Writes `c` in `family`'s spelling over the one at `at` (same length by construction).
void respell(char c, Family family, char* at) {
  const auto byte = static_cast<unsigned char>(c);
  switch (family) {
    case Family::literal:
      at[0] = c;
      return;
    case Family::percent_upper:
    case Family::percent_lower:
    case Family::json_upper:
    case Family::json_lower:
    case Family::entity_hex_upper:
    case Family::entity_hex_lower: {
      const bool upper = family == Family::percent_upper || family == Family::json_upper ||
                         family == Family::entity_hex_upper;
      const std::size_t digits = family == Family::percent_upper || family == Family::percent_lower
                                     ? 1
                                 : family == Family::json_upper || family == Family::json_lower ? 4
                                                                                                : 3;
      const char* hex = upper ? kUpperHex : kLowerHex;
      at[digits] = hex[byte >> 4];
      at[digits + 1] = hex[byte & 15];
      return;
    }
    case Family::other:
      return;  // no spelling of the same length: left as it is
  }
}

int base64_value(char c, bool url_safe) {
  if (c >= 'A' && c <= 'Z') {
    return c - 'A';
  }
  if (c >= 'a' && c <= 'z') {
    return c - 'a' + 26;
  }
  if (c >= '0' && c <= '9') {
    return c - '0' + 52;
  }
  if (c == (url_safe ? '-' : '+')) {
    return 62;
  }
  if (c == (url_safe ? '_' : '/')) {
    return 63;
  }
  return -1;
}

char base64_char(int value, bool url_safe) {
  static constexpr char kStandard[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  static constexpr char kUrlSafe[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  return (url_safe ? kUrlSafe : kStandard)[value & 63];
}

// A base64 form's first or last character at `at`, which may hold bits of the neighbours: does
// it hold the value's `bits`? If so it is rewritten with the masked form's.
bool mixed_matches(const Redaction& form, std::size_t index, unsigned char bits, char at) {
  const int found = base64_value(at, form.url_safe);
  const int real = base64_value(form.real[index], form.url_safe);
  return found >= 0 && real >= 0 && (found & bits) == (real & bits);
}

char mixed_masked(const Redaction& form, std::size_t index, unsigned char bits, char at) {
  const int found = base64_value(at, form.url_safe);
  const int masked = base64_value(form.masked[index], form.url_safe);
  return base64_char((found & ~bits) | (masked & bits), form.url_safe);
}

struct Step {
  std::size_t at;
  Spelling spelling;
};

// One way of matching (see match()).
std::size_t match_once(const Redaction& form, std::size_t from, std::size_t to, const char* data,
                       std::size_t size, std::size_t at, std::vector<Step>& steps,
                       bool literal_first) {
  steps.clear();
  for (std::size_t i = from; i < to; ++i) {
    const char c = form.real[i];
    if (is_ascii_alnum(c)) {
      if (at >= size || data[at] != c) {
        return std::string::npos;
      }
      steps.push_back({at, {1, Family::literal}});
      ++at;
      continue;
    }
    const Spelling spelling = spelled(c, data + at, at <= size ? size - at : 0, literal_first);
    if (spelling.length == 0) {
      return std::string::npos;
    }
    steps.push_back({at, spelling});
    at += spelling.length;
  }
  return at;
}

// Matches form.real[from, to) at data[at, size): each letter and digit as itself, anything else
// in any spelling, the longest first (and, should that fail, the character itself first: a
// value that holds `&amp;` as it is). Fills `steps`; returns where the match ends, or npos.
std::size_t match(const Redaction& form, std::size_t from, std::size_t to, const char* data,
                  std::size_t size, std::size_t at, std::vector<Step>& steps) {
  const std::size_t end = match_once(form, from, to, data, size, at, steps, false);
  return end != std::string::npos ? end : match_once(form, from, to, data, size, at, steps, true);
}

// A run of letters and digits in a form: where it starts and how long it is.
struct Run {
  std::size_t first;
  std::size_t length;
};

// The runs of letters and digits in text[from, to).
std::vector<Run> runs_of(const std::string& text, std::size_t from, std::size_t to) {
  std::vector<Run> runs;
  for (std::size_t i = from; i < to;) {
    if (!is_ascii_alnum(text[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < to && is_ascii_alnum(text[j])) {
      ++j;
    }
    runs.push_back({i, j - i});
    i = j;
  }
  return runs;
}

// Replaces every occurrence of form.real[at, at + length) in data[0, size) with the masked
// form's characters there; returns how many.
std::size_t redact_run(char* data, std::size_t size, const Redaction& form, std::size_t at,
                       std::size_t length) {
  std::size_t replaced = 0;
  const char* run = form.real.data() + at;
  for (std::size_t start = 0; start + length <= size;) {
    void* found = ::memmem(data + start, size - start, run, length);
    if (found == nullptr) {
      break;
    }
    char* hit = static_cast<char*>(found);
    std::memcpy(hit, form.masked.data() + at, length);
    ++replaced;
    start = static_cast<std::size_t>(hit - data) + length;
  }
  return replaced;
}

std::size_t redact_form(char* data, std::size_t size, const Redaction& form) {
  const bool mixed_head = form.base64 && form.head_bits != 0x3f;
  const bool mixed_tail = form.base64 && form.tail_bits != 0x3f;
  const std::size_t from = mixed_head ? 1 : 0;
  const std::size_t to = form.real.size() - (mixed_tail ? 1 : 0);
  // The anchor, found with memmem: the core's longest run of letters and digits (a long needle
  // is found fastest and rarely by chance). What comes before it is matched backwards from there,
  // what follows forwards.
  const std::vector<Run> runs = runs_of(form.real, from, to);
  if (runs.empty()) {
    return 0;  // no letter or digit at all: nothing to anchor on (a value never is so)
  }
  const Run longest = *std::max_element(
      runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.length < b.length; });
  const std::size_t anchor = longest.first;
  std::size_t replaced = 0;
  std::vector<Step> steps;
  std::vector<Step> before;
  {
    const std::size_t first = longest.first;
    const std::size_t length = longest.length;
    const std::string_view lead(form.real.data() + first, length);
    for (std::size_t start = 0; start + lead.size() <= size;) {
      const void* found = ::memmem(data + start, size - start, lead.data(), lead.size());
      if (found == nullptr) {
        break;
      }
      const std::size_t anchored = static_cast<std::size_t>(static_cast<const char*>(found) - data);
      start = anchored + 1;
      // Backwards over the characters before the anchor.
      before.clear();
      std::size_t at = anchored;
      bool matched = true;
      for (std::size_t i = first; i > from; --i) {
        const char c = form.real[i - 1];
        const Spelling spelling =
            is_ascii_alnum(c)
                ? (at > 0 && data[at - 1] == c ? Spelling{1, Family::literal} : Spelling{})
                : spelled_before(c, data, at);
        if (spelling.length == 0) {
          matched = false;
          break;
        }
        at -= spelling.length;
        before.push_back({at, spelling});
      }
      const std::size_t end =
          matched ? match(form, first, to, data, size, anchored, steps) : std::string::npos;
      const bool whole =
          end != std::string::npos &&
          (!mixed_head || (at > 0 && mixed_matches(form, 0, form.head_bits, data[at - 1]))) &&
          (!mixed_tail ||
           (end < size && mixed_matches(form, form.real.size() - 1, form.tail_bits, data[end])));
      if (!whole) {
        // Not the whole form in a known spelling: a long anchor is replaced on its own.
        if (lead.size() >= kLongRun) {
          std::memcpy(data + anchored, form.masked.data() + first, lead.size());
          ++replaced;
          start = anchored + lead.size();
        }
        continue;
      }
      if (mixed_head) {
        data[at - 1] = mixed_masked(form, 0, form.head_bits, data[at - 1]);
      }
      if (mixed_tail) {
        data[end] = mixed_masked(form, form.real.size() - 1, form.tail_bits, data[end]);
      }
      // `before` runs backwards from the anchor: its k-th step is character first - 1 - k.
      for (std::size_t k = 0; k < before.size(); ++k) {
        const std::size_t index = first - 1 - k;
        if (form.real[index] != form.masked[index]) {
          respell(form.masked[index], before[k].spelling.family, data + before[k].at);
        }
      }
      for (std::size_t i = 0; i < steps.size(); ++i) {
        const std::size_t index = first + i;
        if (form.real[index] != form.masked[index]) {
          respell(form.masked[index], steps[i].spelling.family, data + steps[i].at);
        }
      }
      ++replaced;
      start = end;
    }
  }
  // The form's other long runs, wherever they stand on their own.
  for (const Run& run : runs) {
    if (run.first != anchor && run.length >= kLongRun) {
      replaced += redact_run(data, size, form, run.first, run.length);
    }
  }
  return replaced;
}

// The base64 forms looked for in the data without its line breaks (LF and the CR of a CRLF), and
// what they change written back in place: MIME wraps base64 in lines, and a break may fall inside
// a form. Returns how many were replaced.
std::size_t redact_joined_lines(char* data, std::size_t size,
                                const std::vector<Redaction>& redactions) {
  // The data without its line breaks (LF and the CR of a CRLF), copied a line at a time.
  thread_local std::string joined;
  thread_local std::vector<std::pair<std::size_t, std::size_t>> segments;  // (from, length)
  joined.resize(size);
  segments.clear();
  std::size_t kept = 0;
  for (std::size_t i = 0; i < size;) {
    const void* found_lf = std::memchr(data + i, '\n', size - i);
    const std::size_t lf =
        found_lf == nullptr ? size
                            : static_cast<std::size_t>(static_cast<const char*>(found_lf) - data);
    const std::size_t line_end = lf > i && lf < size && data[lf - 1] == '\r' ? lf - 1 : lf;
    std::memcpy(joined.data() + kept, data + i, line_end - i);
    segments.emplace_back(i, line_end - i);
    kept += line_end - i;
    i = lf + 1;
  }
  joined.resize(kept);
  std::size_t found = 0;
  for (const auto& form : redactions) {
    if (form.base64) {
      found += redact_form(joined.data(), joined.size(), form);
    }
  }
  if (found > 0) {
    std::size_t from = 0;
    for (const auto& [at, length] : segments) {
      std::memcpy(data + at, joined.data() + from, length);
      from += length;
    }
  }
  return found;
}

// Whether each byte is a letter or a digit, as a number to add (the separated view's filter).
constexpr std::array<unsigned char, 256> kLetterOrDigit = [] {
  std::array<unsigned char, 256> table{};
  for (int c = 0; c < 256; ++c) {
    table[static_cast<std::size_t>(c)] = is_ascii_alnum(static_cast<char>(c)) ? 1 : 0;
  }
  return table;
}();

// The separated view is built in blocks of this many bytes; where each block's letters and digits
// start in the view is kept, so that a match in the view is found in the data by a short walk.
constexpr std::size_t kViewBlock = 256;

// Every form's skeleton looked for in one pass over the view (Wu and Manber's multi-pattern
// search: a window as long as the shortest skeleton, at most kWindow, slides by the table's shift
// for its last three characters, and only a window whose last three could end a skeleton's first
// kWindow characters is compared). Over letters and digits, memmem per form crawls: a long needle
// fills its shift table. Made once per set of forms and thread (see of()).
class SkeletonSearch {
 public:
  static constexpr std::size_t kWindow = 32;
  static constexpr std::size_t kBlock = 3;
  static constexpr std::size_t kTable = 4096;

  // The search for `forms`, made again only when they change.
  static const SkeletonSearch& of(const std::vector<Redaction>& forms) {
    thread_local SkeletonSearch made;
    if (!made.made_for(forms)) {
      made = SkeletonSearch(forms);
    }
    return made;
  }

  // Calls found(form, at) for each skeleton found in view[0, size), left to right per window;
  // returns how many were found.
  template <class Found>
  std::size_t find_all(const char* view, std::size_t size, Found&& found) const {
    if (window_ == 0 || size < window_) {
      return 0;
    }
    std::size_t count = 0;
    for (std::size_t end = window_ - 1; end < size;) {
      const std::size_t key = hash(view + end + 1 - kBlock);
      if (shift_[key] > 0) {
        end += shift_[key];
        continue;
      }
      const std::size_t start = end + 1 - window_;
      for (const Redaction* form : ending_[key]) {
        const std::string& skeleton = form->skeleton;
        if (start + skeleton.size() <= size &&
            std::memcmp(view + start, skeleton.data(), skeleton.size()) == 0) {
          found(*form, start);
          ++count;
        }
      }
      ++end;
    }
    return count;
  }

 private:
  SkeletonSearch() = default;
  explicit SkeletonSearch(const std::vector<Redaction>& forms) {
    key_ = forms;
    window_ = kWindow;
    for (const auto& form : key_) {
      if (form.skeleton.size() >= kLongRun) {
        window_ = std::min(window_, form.skeleton.size());
      }
    }
    shift_.assign(kTable, static_cast<std::uint8_t>(window_ - kBlock + 1));
    ending_.assign(kTable, {});
    for (const auto& form : key_) {
      if (form.skeleton.size() < kLongRun) {
        continue;
      }
      for (std::size_t j = kBlock - 1; j < window_; ++j) {
        const std::size_t key = hash(form.skeleton.data() + j + 1 - kBlock);
        shift_[key] =
            std::min<std::uint8_t>(shift_[key], static_cast<std::uint8_t>(window_ - 1 - j));
      }
      ending_[hash(form.skeleton.data() + window_ - kBlock)].push_back(&form);
    }
  }

  static std::size_t hash(const char* at) {
    const auto a = static_cast<unsigned char>(at[0]);
    const auto b = static_cast<unsigned char>(at[1]);
    const auto c = static_cast<unsigned char>(at[2]);
    return ((a << 6) ^ (b << 3) ^ c ^ (a >> 2)) & (kTable - 1);
  }

  // Whether this search was made for `forms` (the same skeletons, in order).
  bool made_for(const std::vector<Redaction>& forms) const {
    if (window_ == 0 || forms.size() != key_.size()) {
      return false;
    }
    // A set stamped when it was made (masked_secrets.hpp) is never changed: its stamp names it.
    if (forms.front().set != 0 && forms.front().set == key_.front().set &&
        forms.back().set == key_.back().set) {
      return true;
    }
    return std::equal(forms.begin(), forms.end(), key_.begin(),
                      [](const Redaction& a, const Redaction& b) {
                        return a.skeleton == b.skeleton && a.masked_skeleton == b.masked_skeleton;
                      });
  }

  std::vector<Redaction> key_;  // the forms it was made for (a copy: found() refers to them)
  std::size_t window_ = 0;
  std::vector<std::uint8_t> shift_;
  std::vector<std::vector<const Redaction*>> ending_;
};

// The view may be written this far past its last letter or digit (whole 16-byte stores).
constexpr std::size_t kViewSlack = 16;

// Copies the letters and digits of data[0, size) to `out`, in order, and where each block of
// kViewBlock bytes starts in it to `starts`; returns how many. One byte at a time here.
std::size_t letters_and_digits_bytewise(const char* data, std::size_t size, char* out,
                                        std::uint32_t* starts) {
  const auto* const in = reinterpret_cast<const unsigned char*>(data);
  std::size_t kept = 0;
  for (std::size_t block = 0; block * kViewBlock < size; ++block) {
    starts[block] = static_cast<std::uint32_t>(kept);
    const std::size_t end = std::min(size, (block + 1) * kViewBlock);
    for (std::size_t i = block * kViewBlock; i < end; ++i) {
      const unsigned char byte = in[i];
      out[kept] = static_cast<char>(byte);
      kept += kLetterOrDigit[byte];
    }
  }
  return kept;
}

#if defined(__x86_64__)
// The same, 16 bytes at a time (SSSE3): each half's letters and digits are gathered to its front
// by one shuffle, from a table of the 256 shapes of eight bytes, and stored whole.
constexpr std::array<std::array<std::uint8_t, 16>, 256> kGather = [] {
  std::array<std::array<std::uint8_t, 16>, 256> table{};
  for (unsigned mask = 0; mask < 256; ++mask) {
    unsigned k = 0;
    for (unsigned bit = 0; bit < 8; ++bit) {
      if ((mask >> bit & 1) != 0) {
        table[mask][k++] = static_cast<std::uint8_t>(bit);
      }
    }
    while (k < 16) {
      table[mask][k++] = 0x80;  // a zero byte
    }
  }
  return table;
}();

__attribute__((target("ssse3,popcnt"))) std::size_t letters_and_digits_ssse3(
    const char* data, std::size_t size, char* out, std::uint32_t* starts) {
  const __m128i case_bit = _mm_set1_epi8(0x20);
  // (x - base - 128) as a signed byte is below -128 + span exactly when base <= x < base + span.
  const __m128i letter_shift = _mm_set1_epi8(static_cast<char>(-'a' - 128));
  const __m128i letter_limit = _mm_set1_epi8(static_cast<char>(-128 + 26));
  const __m128i digit_shift = _mm_set1_epi8(static_cast<char>(-'0' - 128));
  const __m128i digit_limit = _mm_set1_epi8(static_cast<char>(-128 + 10));
  std::size_t kept = 0;
  std::size_t i = 0;
  for (std::size_t block = 0; block * kViewBlock < size; ++block) {
    starts[block] = static_cast<std::uint32_t>(kept);
    const std::size_t end = std::min(size, (block + 1) * kViewBlock);
    for (; i + 16 <= end; i += 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
      const __m128i letter =
          _mm_cmplt_epi8(_mm_add_epi8(_mm_or_si128(bytes, case_bit), letter_shift), letter_limit);
      const __m128i digit = _mm_cmplt_epi8(_mm_add_epi8(bytes, digit_shift), digit_limit);
      const auto mask = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(letter, digit)));
      const __m128i low = _mm_shuffle_epi8(
          bytes, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kGather[mask & 0xff].data())));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + kept), low);
      kept += static_cast<std::size_t>(__builtin_popcount(mask & 0xff));
      const __m128i high = _mm_shuffle_epi8(
          _mm_srli_si128(bytes, 8),
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(kGather[mask >> 8].data())));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + kept), high);
      kept += static_cast<std::size_t>(__builtin_popcount(mask >> 8));
    }
    for (; i < end; ++i) {
      const auto byte = static_cast<unsigned char>(data[i]);
      out[kept] = static_cast<char>(byte);
      kept += kLetterOrDigit[byte];
    }
  }
  return kept;
}
#endif

std::size_t letters_and_digits(const char* data, std::size_t size, char* out,
                               std::uint32_t* starts) {
#if defined(__x86_64__)
  static const bool ssse3 = __builtin_cpu_supports("ssse3") && __builtin_cpu_supports("popcnt");
  if (ssse3) {
    return letters_and_digits_ssse3(data, size, out, starts);
  }
#endif
  return letters_and_digits_bytewise(data, size, out, starts);
}

// Every form looked for once more in the data's letters and digits alone (the separated view):
// an echo that puts anything between a form's characters (`78 2d 61`, `78:2d`, `\x78\x2d`,
// `[0x78, 0x2d]`, base64 broken by line breaks or spaces) is found and its letters and digits
// replaced in place. Returns how many were.
std::size_t redact_separated(char* data, std::size_t size, const std::vector<Redaction>& forms) {
  thread_local std::string view;
  thread_local std::vector<std::uint32_t> block_starts;  // view index of each block's first
  thread_local std::vector<std::pair<std::size_t, char>> writes;
  block_starts.resize(size / kViewBlock + 1);
  view.resize(size + kViewSlack);
  const std::size_t kept = letters_and_digits(data, size, view.data(), block_starts.data());
  writes.clear();
  // The data's bytes of view[at, at + length): from the start of its block, counting letters and
  // digits (the data is not written until every form has been looked for), each to get the
  // masked skeleton's character.
  const std::size_t blocks = (size - 1) / kViewBlock + 1;
  const auto write_back = [&](const Redaction& form, std::size_t at) {
    const std::size_t block = static_cast<std::size_t>(
        std::upper_bound(block_starts.begin(),
                         block_starts.begin() + static_cast<std::ptrdiff_t>(blocks),
                         static_cast<std::uint32_t>(at)) -
        block_starts.begin() - 1);
    std::size_t index = block_starts[block];
    std::size_t i = block * kViewBlock;
    for (std::size_t k = 0; k < form.skeleton.size(); ++i) {
      if (kLetterOrDigit[static_cast<unsigned char>(data[i])] == 0) {
        continue;
      }
      if (index++ >= at) {
        writes.emplace_back(i, form.masked_skeleton[k++]);
      }
    }
  };
  const SkeletonSearch& search = SkeletonSearch::of(forms);
  const std::size_t replaced =
      search.find_all(view.data(), kept, [&](const Redaction& form, std::size_t at) {
        write_back(form, at);
        // Masked in the view too, so that no other form is found over it again.
        std::memcpy(view.data() + at, form.masked_skeleton.data(), form.skeleton.size());
      });
  for (const auto& [at, c] : writes) {
    data[at] = c;
  }
  return replaced;
}

}  // namespace

std::size_t redact(char* data, std::size_t size, const std::vector<Redaction>& redactions) {
  std::size_t replaced = 0;
  // MIME wraps base64 in lines, and a line break may fall inside a form: base64 forms are looked
  // for in the data without its line breaks, and what they change is written back in place.
  const bool lines = std::memchr(data, '\n', size) != nullptr;
  bool base64 = false;
  for (const auto& form : redactions) {
    if (form.view_only) {
      continue;
    }
    if (form.base64 && lines) {
      base64 = true;
    } else {
      replaced += redact_form(data, size, form);
    }
  }
  if (base64) {
    replaced += redact_joined_lines(data, size, redactions);
  }
  // Last, what is left of every form with anything between its characters.
  if (size > 0) {
    replaced += redact_separated(data, size, redactions);
  }
  return replaced;
}

std::size_t redact(std::string& text, const std::vector<Redaction>& redactions) {
  return redact(text.data(), text.size(), redactions);
}

namespace {

// What a beginning of a form found at the end of the data is worth: the bits of the secret its
// letters and digits spell (those where the real form and the masked one differ: a prefix the
// sentinel keeps, `ghp_`, is worth nothing), and where each letter or digit of it stands with the
// masked form's character for it (to clean it when the data ends there).
struct Beginning {
  double bits = 0;
  std::vector<std::pair<std::size_t, char>>* letters = nullptr;  // (offset, masked), if wanted
};

// Whether data[0, size) spells the beginning of `form` (each character as redact_form() reads
// it, a spelling of punctuation cut short by the end included) and runs out before the form
// does; what it is worth.
std::optional<Beginning> spelled_prefix(const Redaction& form, const char* data, std::size_t size,
                                        Beginning found = {}) {
  const bool mixed_head = form.base64 && form.head_bits != 0x3f;
  std::size_t at = 0;
  for (std::size_t i = mixed_head ? 1 : 0; i < form.real.size(); ++i) {
    if (at == size) {
      return found;
    }
    const char c = form.real[i];
    if (is_ascii_alnum(c)) {
      if (data[at] != c) {
        return std::nullopt;
      }
      if (form.masked[i] != c) {
        found.bits += form.bits_per_char;
      }
      if (found.letters != nullptr) {
        found.letters->emplace_back(at, form.masked[i]);
      }
      ++at;
      continue;
    }
    const Spelling whole = spelled(c, data + at, size - at, false);
    if (whole.length > 0) {
      at += whole.length;
      continue;
    }
    // A spelling the end of the data cuts short.
    const std::size_t left = size - at;
    for (const auto& [text, family] : spellings_of(c)) {
      if (text.size() > left && std::memcmp(data + at, text.data(), left) == 0) {
        return found;
      }
    }
    return std::nullopt;
  }
  return std::nullopt;  // the whole form: it would have been replaced
}

// The same for `form`'s skeleton, with anything between its letters and digits.
std::optional<Beginning> separated_prefix(const Redaction& form, const char* data, std::size_t size,
                                          Beginning found = {}) {
  std::size_t k = 0;
  for (std::size_t at = 0; at < size; ++at) {
    if (!is_ascii_alnum(data[at])) {
      continue;
    }
    if (k == form.skeleton.size() || data[at] != form.skeleton[k]) {
      return std::nullopt;
    }
    if (form.masked_skeleton[k] != form.skeleton[k]) {
      found.bits += form.bits_per_char;
    }
    if (found.letters != nullptr) {
      found.letters->emplace_back(at, form.masked_skeleton[k]);
    }
    ++k;
  }
  return found;
}

}  // namespace

StreamRedaction::StreamRedaction(const std::vector<Redaction>& redactions)
    : redactions_(redactions) {
  double weakest = std::numeric_limits<double>::infinity();
  for (const auto& form : redactions) {
    weakest = std::min(weakest, form.secret_bits);
    // Where an echo of the form may end at most: every character in its longest spelling (a form
    // of letters and digits alone, found in the separated view, with three bytes between any two
    // of them), and a mixed character on either side.
    carry_limit_ =
        std::max(carry_limit_, form.real.size() * (form.view_only ? 4 : kLongestSpelling) + 2);
    for (const Run& run : runs_of(form.real, 0, form.real.size())) {
      if (run.length >= kLongRun) {
        long_runs_.push_back({&form, run.first, run.length});
      }
    }
    // The ways a form's beginning may start, by its first byte: its skeleton's first character
    // (separated), and its own first character in every spelling.
    if (form.skeleton.empty()) {
      continue;
    }
    beginners_[static_cast<unsigned char>(form.skeleton.front())].push_back({&form, true});
    if (form.view_only) {
      continue;
    }
    const bool mixed_head = form.base64 && form.head_bits != 0x3f;
    const char head = form.real[mixed_head ? 1 : 0];
    if (is_ascii_alnum(head)) {
      beginners_[static_cast<unsigned char>(head)].push_back({&form, false});
    } else {
      std::array<bool, 256> starts{};
      for (const auto& [text, family] : spellings_of(head)) {
        starts[static_cast<unsigned char>(text.front())] = true;
      }
      for (std::size_t byte = 0; byte < 256; ++byte) {
        if (starts[byte]) {
          beginners_[byte].push_back({&form, false});
        }
      }
    }
  }
  streams_ = redactions.empty() || weakest >= kStreamingSecretBits;
}

std::size_t StreamRedaction::hold_from(const char* data, std::size_t size) {
  strong_ = false;
  strong_from_ = size;
  strong_letters_.clear();
  const std::size_t low = size > carry_limit_ ? size - carry_limit_ : 0;
  if (!streams_) {
    // A secret too short to stream with (see kStreamingSecretBits): a window of fixed length,
    // whatever it holds, waits for the next piece, through pauses too.
    strong_ = true;
    return std::max(sent_, low);
  }
  // The trailing run of letters and digits (not sent yet, within the window) may go on as one of
  // a form's long runs, which are replaced wherever they stand: it waits for the next piece. It
  // waits through pauses too when it ends in kHoldBits or more of such a run's beginning.
  std::size_t run = size;
  while (run > std::max(sent_, low) && is_ascii_alnum(data[run - 1])) {
    --run;
  }
  for (std::size_t from = run; from < size && !strong_; ++from) {
    const std::string_view tail(data + from, size - from);
    for (const LongRun& long_run : long_runs_) {
      const std::string_view text(long_run.form->real.data() + long_run.first, long_run.length);
      if (text.size() <= tail.size() || !text.starts_with(tail)) {
        continue;
      }
      double bits = 0;
      for (std::size_t i = 0; i < tail.size(); ++i) {
        const std::size_t index = long_run.first + i;
        if (long_run.form->real[index] != long_run.form->masked[index]) {
          bits += long_run.form->bits_per_char;
        }
      }
      if (bits >= kHoldBits) {
        strong_ = true;
        strong_from_ = from;
        strong_letters_.clear();
        for (std::size_t i = 0; i < tail.size(); ++i) {
          strong_letters_.emplace_back(from + i, long_run.form->masked[long_run.first + i]);
        }
        break;
      }
    }
  }
  // A form's beginning, in any spelling or with separators between its characters, that goes on
  // to the end and spells kHoldBits or more of the secret: what is not sent of it waits, through
  // pauses too, until it is whole (and cleaned), is no form after all, or the data ends (and it
  // is cleaned). It may have begun in bytes already sent (kept as context). A beginning worth
  // less goes at once: what the gate lets out or holds must not tell a client that its guess of
  // a secret's first characters is right, and a guess worth kHoldBits is out of reach. So an echo
  // cut there lets out at most the first kHoldBits of the secret in it; the next piece finds the
  // rest in the context and holds it.
  for (std::size_t p = low; p < size; ++p) {
    const auto first = static_cast<unsigned char>(data[p]);
    double best = -1;
    const Beginner* chosen = nullptr;
    for (const Beginner& beginner : beginners_[first]) {
      const auto found = beginner.separated ? separated_prefix(*beginner.form, data + p, size - p)
                                            : spelled_prefix(*beginner.form, data + p, size - p);
      if (found && found->bits > best) {
        best = found->bits;
        chosen = &beginner;
      }
    }
    if (chosen != nullptr && best >= kHoldBits) {
      strong_ = true;
      strong_from_ = p;
      // Where its letters and digits stand, should the body end here (pass()).
      std::vector<std::pair<std::size_t, char>> letters;
      const Beginning want{0, &letters};
      if (chosen->separated) {
        separated_prefix(*chosen->form, data + p, size - p, want);
      } else {
        spelled_prefix(*chosen->form, data + p, size - p, want);
      }
      strong_letters_.clear();
      for (const auto& [offset, masked] : letters) {
        strong_letters_.emplace_back(p + offset, masked);
      }
      // A base64 form's mixed first character stands just before: held with it.
      return std::max(sent_, std::min(run, p > 0 ? p - 1 : p));
    }
  }
  return strong_ ? std::max(sent_, std::min(run, strong_from_)) : run;
}

StreamRedaction::Ready StreamRedaction::pass(char* data, std::size_t fresh, bool last) {
  size_ = carried_ + fresh;
  replaced_ += redact(data, size_, redactions_);
  std::size_t hold = size_;
  if (last) {
    // The data ends in the middle of an echo worth holding: cleaned as far as it goes.
    hold_from(data, size_);
    if (strong_ && streams_) {
      for (const auto& [at, masked] : strong_letters_) {
        if (at >= sent_) {
          data[at] = masked;
        }
      }
      ++replaced_;
    }
    strong_ = false;
  } else {
    hold = hold_from(data, size_);
  }
  const Ready ready{sent_, hold - sent_};
  sent_ = hold;
  return ready;
}

StreamRedaction::Ready StreamRedaction::on_pause() {
  if (strong_ || sent_ == size_) {
    return {sent_, 0};
  }
  const Ready ready{sent_, size_ - sent_};
  sent_ = size_;
  return ready;
}

void StreamRedaction::to_front(char* data) {
  const std::size_t unsent = size_ - sent_;
  const std::size_t keep = std::min(size_, unsent + carry_limit_);
  std::memmove(data, data + size_ - keep, keep);
  carried_ = keep;
  size_ = keep;
  sent_ = keep - unsent;
}

}  // namespace sandgate::secrets
