// Reading a secret from a file (--token-file, --admin-token-file): a regular file that other
// users can neither read nor write (as ssh requires of private keys), its first line, read with
// a bound. The messages name the file's kind and path, never its content.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "rules/expected.hpp"

namespace sandgate::settings {

// The first line of `path` (without its CR LF or LF), not empty; at most `max_length` bytes
// are looked at beyond which the line is returned cut (the caller's length check refuses it).
// The error says what is wrong, calling the file "the NOUN file".
Expected<std::string, std::string> read_token_line(const std::string& path, std::string_view noun,
                                                   std::size_t max_length);

}  // namespace sandgate::settings
