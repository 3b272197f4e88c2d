// What the fuzz targets share: an invariant check that is never compiled out and that names the
// broken invariant and the values involved before it aborts, so that a crash report says what
// went wrong, not only where.
//
// A failed check calls abort(); libFuzzer (and AFL++) catch the signal, write the input that
// caused it, and exit non-zero. Single-threaded, like the targets themselves.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace sandgate::fuzz {

// A printable rendering of bytes: printable ASCII as is, everything else (and '\\') as \xNN.
inline std::string escaped(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size());
  for (const char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += ch;
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out;
}

[[noreturn]] inline void fail(const char* condition, const char* file, int line,
                              const std::string& detail) {
  std::fprintf(stderr, "\n==sandgate-fuzz== invariant broken at %s:%d\n  check:  %s\n", file, line,
               condition);
  if (!detail.empty()) {
    std::fprintf(stderr, "  detail: %s\n", detail.c_str());
  }
  std::fflush(stderr);
  std::abort();
}

}  // namespace sandgate::fuzz

// FUZZ_CHECK(condition, detail): `detail` is any expression convertible to std::string; it is
// only evaluated when the check fails.
#define FUZZ_CHECK(condition, detail)                                   \
  do {                                                                  \
    if (!(condition)) {                                                 \
      ::sandgate::fuzz::fail(#condition, __FILE__, __LINE__, (detail)); \
    }                                                                   \
  } while (false)
