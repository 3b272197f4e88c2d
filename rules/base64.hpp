// Base64 (RFC 4648), the one encoder and strict decoder of the project: Basic credentials the
// gate checks (its token) and sends (a parent proxy's), and those it fills masked secrets into.
// Pure functions on values; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sandgate::rules {

// `bytes` in base64, padded with '='; with `url_safe`, the URL-safe alphabet ('-' and '_').
std::string base64_encoded(std::string_view bytes, bool url_safe = false);

// The bytes `text` encodes in standard base64, or nothing unless it is exactly one canonical
// encoding: a multiple of four characters, all in the alphabet, '=' only as the final padding,
// and the bits the padding leaves over zero.
std::optional<std::string> base64_decoded(std::string_view text);

}  // namespace sandgate::rules
