// Replacing real forms of secrets in what bound hosts send back. See redaction.hpp.
#include "proxy/secrets/redaction.hpp"

#include <algorithm>
#include <cstring>

namespace sandgate::secrets {

std::size_t redact(char* data, std::size_t size, const std::vector<Redaction>& redactions) {
  std::size_t replaced = 0;
  for (const auto& [real, masked] : redactions) {
    char* from = data;
    std::size_t left = size;
    while (left >= real.size()) {
      void* found = ::memmem(from, left, real.data(), real.size());
      if (found == nullptr) {
        break;
      }
      char* at = static_cast<char*>(found);
      std::memcpy(at, masked.data(), masked.size());
      ++replaced;
      left -= static_cast<std::size_t>(at - from) + real.size();
      from = at + real.size();
    }
  }
  return replaced;
}

std::size_t redact(std::string& text, const std::vector<Redaction>& redactions) {
  return redact(text.data(), text.size(), redactions);
}

StreamRedaction::StreamRedaction(const std::vector<Redaction>& redactions)
    : redactions_(redactions) {
  for (const auto& redaction : redactions) {
    carry_limit_ = std::max(carry_limit_, redaction.real.size() - 1);
  }
}

std::size_t StreamRedaction::pass(char* data, std::size_t fresh, bool last) {
  const std::size_t size = carried_ + fresh;
  replaced_ += redact(data, size, redactions_);
  const std::size_t hold = last ? 0 : std::min(carry_limit_, size);
  held_.assign(data + size - hold, hold);
  carried_ = hold;
  return size - hold;
}

void StreamRedaction::held_back_to_front(char* data) {
  std::memcpy(data, held_.data(), held_.size());
}

}  // namespace sandgate::secrets
