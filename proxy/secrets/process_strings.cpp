// The secrets masked in the process's own strings. See process_strings.hpp.
#include "proxy/secrets/process_strings.hpp"

#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/secrets/redaction.hpp"

extern char** environ;

namespace sandgate::secrets {
namespace {

// The strings the kernel placed at exec: each argument and each initial NAME=VALUE entry.
std::vector<std::pair<char*, std::size_t>>& noted_strings() {
  static std::vector<std::pair<char*, std::size_t>> strings;
  return strings;
}

// Every variable that holds a secret in any form holds its masked form instead.
void mask_environment(const MaskedSecrets& secrets) {
  std::vector<std::pair<std::string, std::string>> changed;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text = *entry;
    const std::size_t equals = text.find('=');
    if (equals == std::string_view::npos) {
      continue;
    }
    std::string value(text.substr(equals + 1));
    if (redact(value, secrets.redactions()) > 0) {
      changed.emplace_back(std::string(text.substr(0, equals)), std::move(value));
    }
  }
  for (const auto& [name, value] : changed) {
    ::setenv(name.c_str(), value.c_str(), 1);
  }
}

// The noted strings, each form of a secret overwritten in place by its masked form.
void mask_noted_strings(const MaskedSecrets& secrets) {
  for (const auto& [start, size] : noted_strings()) {
    std::string text(start, size);
    if (redact(text, secrets.redactions()) == 0) {
      continue;
    }
    if (text.size() == size) {
      std::memcpy(start, text.data(), size);
    } else {
      // A masked form of another length (none is made so): nothing of the string is kept.
      std::fill(start, start + size, '*');
    }
  }
}

}  // namespace

void note_process_strings(int argc, char** argv) {
  auto& strings = noted_strings();
  strings.clear();
  for (int i = 0; argv != nullptr && i < argc && argv[i] != nullptr; ++i) {
    strings.emplace_back(argv[i], std::strlen(argv[i]));
  }
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    strings.emplace_back(*entry, std::strlen(*entry));
  }
}

void mask_process_strings(const MaskedSecrets& secrets) {
  if (secrets.empty()) {
    return;
  }
  // The environment first: setenv() gives each changed variable a string of its own, so the
  // initial strings overwritten next are no longer what getenv() returns for it.
  mask_environment(secrets);
  mask_noted_strings(secrets);
}

}  // namespace sandgate::secrets
