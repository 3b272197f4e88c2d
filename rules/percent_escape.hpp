// The digit of a percent-escape (`%2F`): what every decoder of escapes in the project reads with.
// Pure; thread-safe.
#pragma once

namespace sandgate::rules {

// The value of a hexadecimal digit, or -1 for any other character.
constexpr int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

}  // namespace sandgate::rules
