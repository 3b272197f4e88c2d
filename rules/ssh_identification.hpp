// Is a client speaking SSH? Read as the most tolerant SSH server reads it. RFC 4253 section 4.2
// lets lines come before the identification line ("SSH-2.0-..."), and real servers skip lines a
// client sends first: Go's x/crypto/ssh (Gitea, Gogs, Teleport, gliderlabs) skips any line that
// does not start with "SSH-" within its first 255 bytes, Dropbear skips 50 lines and cuts a line
// at 255 bytes, ignoring every CR, Paramiko skips 100 lines. OpenSSH's sshd accepts none, so a
// literal "SSH-" prefix was all an older check looked at, and "\r\nSSH-2.0-..." passed it.
//
// The watch takes the union of those readers, the stricter reading each time:
//   - a line ends at LF; CR bytes are ignored wherever they are (Dropbear);
//   - a line also ends after 255 bytes without LF (Dropbear's cut, CRs not counted);
//   - a line whose first four bytes (CRs aside) are "SSH-" is an identification: SSH;
//   - up to kMaxLines lines and kMaxBytes bytes are looked at; past either, or once a line
//     cannot be the identification and no later one can come within the bounds, it is not SSH.
// While a line's first bytes are a proper prefix of "SSH-" ("S", "SS", "SSH"), those bytes are
// held (hold()): they are relayed only once the line turns out to be something else. Everything
// before them may be relayed at once, so a client that sends a line and waits for the server (an
// HTTP request) is never held up. A client that stops on a held prefix is taken for SSH.
//
// Incremental and pure; one per tunnel, used on its worker's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sandgate::rules {

class SshIdentificationWatch {
 public:
  enum class Verdict : std::uint8_t {
    undecided,  // could still be SSH: look at what comes next
    ssh,        // an identification line, within the bounds: the SSH rules apply
    not_ssh,    // nothing within the bounds can be one any more
  };
  // Lines and bytes a tolerant server reads before it gives up finding an identification:
  // Paramiko's 100 lines (Dropbear's 50), each at most 255 bytes as RFC 4253 bounds the
  // identification, and 32 KiB in all (CR runs included).
  static constexpr std::size_t kMaxLines = 100;
  static constexpr std::size_t kMaxLineBytes = 255;
  static constexpr std::size_t kMaxBytes = 32 * 1024;

  // The next bytes of the client's stream; each byte is given once, in order.
  Verdict feed(std::string_view bytes);
  // No more bytes will come (the client's end, or the patience ran out): a held prefix of
  // "SSH-" is taken for SSH; otherwise not SSH.
  Verdict finish();
  Verdict verdict() const { return verdict_; }
  // How many of the last bytes fed must not be relayed yet (a prefix of "SSH-" and the CRs
  // among it); 0 unless undecided.
  std::size_t hold() const;

 private:
  void next_line();

  Verdict verdict_ = Verdict::undecided;
  std::size_t total_ = 0;       // bytes fed
  std::size_t lines_ = 0;       // lines begun after the first
  std::size_t line_bytes_ = 0;  // bytes of the current line, CRs not counted
  int matched_ = 0;             // bytes of "SSH-" the current line starts with; -1: cannot
  std::size_t line_start_ = 0;  // offset of the current line's first byte other than CR
};

}  // namespace sandgate::rules
