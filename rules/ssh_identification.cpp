// The tolerant SSH identification watch. See ssh_identification.hpp.
#include "rules/ssh_identification.hpp"

namespace sandgate::rules {
namespace {

constexpr std::string_view kPrefix = "SSH-";

}  // namespace

void SshIdentificationWatch::next_line() {
  ++lines_;
  line_bytes_ = 0;
  matched_ = 0;
  if (lines_ >= kMaxLines) {
    verdict_ = Verdict::not_ssh;  // a server reading this far has given up on the client
  }
}

SshIdentificationWatch::Verdict SshIdentificationWatch::feed(std::string_view bytes) {
  for (const char c : bytes) {
    if (verdict_ != Verdict::undecided) {
      break;
    }
    const std::size_t offset = total_++;
    if (c == '\n') {
      next_line();
    } else if (c != '\r') {
      if (matched_ >= 0 && line_bytes_ < kPrefix.size()) {
        if (c == kPrefix[static_cast<std::size_t>(matched_)]) {
          if (matched_ == 0) {
            line_start_ = offset;
          }
          if (++matched_ == static_cast<int>(kPrefix.size())) {
            verdict_ = Verdict::ssh;
            break;
          }
        } else {
          matched_ = -1;
        }
      }
      if (++line_bytes_ >= kMaxLineBytes) {
        next_line();  // Dropbear reads the rest as a line of its own
      }
    }
    if (verdict_ == Verdict::undecided && total_ >= kMaxBytes) {
      verdict_ = Verdict::not_ssh;
    }
  }
  return verdict_;
}

SshIdentificationWatch::Verdict SshIdentificationWatch::finish() {
  if (verdict_ == Verdict::undecided) {
    verdict_ = matched_ > 0 ? Verdict::ssh : Verdict::not_ssh;
  }
  return verdict_;
}

std::size_t SshIdentificationWatch::hold() const {
  if (verdict_ != Verdict::undecided || matched_ <= 0) {
    return 0;
  }
  return total_ - line_start_;
}

}  // namespace sandgate::rules
