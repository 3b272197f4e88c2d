// Reading a git index's hidden entries. See git_index.hpp; the format is git's
// Documentation/gitformat-index.txt.
#include "sandbox-profile/audit/git_index.hpp"

#include <cstdint>

namespace sandgate::sandbox {
namespace {

std::uint32_t be32(std::string_view bytes, std::size_t at) {
  return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at])) << 24 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + 1])) << 16 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + 2])) << 8 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + 3]));
}

std::uint16_t be16(std::string_view bytes, std::size_t at) {
  return static_cast<std::uint16_t>(static_cast<unsigned char>(bytes[at]) << 8 |
                                    static_cast<unsigned char>(bytes[at + 1]));
}

constexpr std::uint16_t kAssumeValid = 0x8000;   // flags: assume-unchanged
constexpr std::uint16_t kExtended = 0x4000;      // flags: 16 more bits follow (version 3+)
constexpr std::uint16_t kSkipWorktree = 0x4000;  // extended flags
constexpr std::size_t kStatPart = 40;            // ctime, mtime, dev, ino, mode, uid, gid, size

}  // namespace

HiddenIndexEntries hidden_index_entries(std::string_view bytes, std::size_t hash_size) {
  HiddenIndexEntries out;
  if (bytes.size() < 12 || bytes.substr(0, 4) != "DIRC") {
    return out;
  }
  const std::uint32_t version = be32(bytes, 4);
  const std::uint32_t count = be32(bytes, 8);
  if (version < 2 || version > 4) {
    return out;
  }
  std::size_t at = 12;
  std::string previous;  // version 4 writes each path as a change to the one before
  HiddenIndexEntries found;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::size_t start = at;
    if (at + kStatPart + hash_size + 2 > bytes.size()) {
      return out;
    }
    at += kStatPart + hash_size;
    const std::uint16_t flags = be16(bytes, at);
    at += 2;
    std::uint16_t extended = 0;
    if ((flags & kExtended) != 0) {
      if (version < 3 || at + 2 > bytes.size()) {
        return out;
      }
      extended = be16(bytes, at);
      at += 2;
    }
    std::string path;
    if (version == 4) {
      // A varint (git's offset encoding) of bytes to strip from the previous path.
      std::size_t strip = 0;
      for (int n = 0;; ++n) {
        if (at >= bytes.size() || n > 8) {
          return out;
        }
        const auto byte = static_cast<unsigned char>(bytes[at++]);
        strip = (strip << 7) | (byte & 0x7f);
        if ((byte & 0x80) == 0) {
          break;
        }
        ++strip;
      }
      if (strip > previous.size()) {
        return out;
      }
      path = previous.substr(0, previous.size() - strip);
    }
    const auto end = bytes.find('\0', at);
    if (end == std::string_view::npos) {
      return out;
    }
    path.append(bytes.substr(at, end - at));
    at = end + 1;
    if (version != 4) {
      at = start + ((at - start + 7) / 8) * 8;  // 1 to 8 NULs end an entry on 8 bytes
    }
    previous = path;
    if ((flags & kAssumeValid) != 0) {
      found.assume_unchanged.insert(path);
    }
    if ((extended & kSkipWorktree) != 0) {
      found.skip_worktree.insert(path);
    }
  }
  found.parsed = true;
  return found;
}

}  // namespace sandgate::sandbox
