// SBPL (the Seatbelt profile language) string literals: quoting a path so that sandbox-exec reads
// back exactly the bytes that were meant, or refusing the path.
//
// SBPL is a Scheme dialect: a string is "..." in which `\` and `"` must be escaped. goose inserted
// the home folder unescaped, so a home such as `/Users/a"b` broke or rewrote the profile. A path
// that cannot be represented safely (see PathProblem) is an error, never a silently wrong rule.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rules/expected.hpp"

namespace sandgate::sandbox {

// Why a path cannot be put into a profile.
enum class PathProblem : std::uint8_t {
  empty,              // "" names nothing
  not_absolute,       // Seatbelt matches absolute paths only: a relative rule never matches
  not_normal,         // `//`, `/./`, `/../` or a trailing `/`: the kernel's path never looks so
  nul,                // a NUL would end the path early: the rule would cover a different path
  control_character,  // tab, newline, ESC, DEL...: no sane path has one, and SBPL has no escape
                      // that every version of sandbox-exec reads back the same
  invalid_utf8,       // Seatbelt compares UTF-8 paths; other bytes can be rewritten on the way
};

// A short phrase for messages: "contains a control character".
std::string_view describe(PathProblem problem);

// Checks that `path` can be inserted into a profile: absolute, normal, valid UTF-8, free of
// control characters. Returns the first problem found.
std::optional<PathProblem> check_path(std::string_view path);

// The SBPL string literal for `path` ("..." with `\` and `"` escaped; other bytes, including
// non-ASCII UTF-8, as they are), or the reason it cannot be one.
Expected<std::string, PathProblem> sbpl_path(std::string_view path);

// `text` as an SBPL string literal, `\` and `"` escaped, nothing checked: for text sandgate
// builds itself from checked paths (regexes). Control characters must not reach it.
std::string sbpl_quote(std::string_view text);

// `text` made safe to print in an error message: control characters and bytes that are not
// UTF-8 become \xHH, `\` becomes `\\`.
std::string printable(std::string_view text);

}  // namespace sandgate::sandbox
