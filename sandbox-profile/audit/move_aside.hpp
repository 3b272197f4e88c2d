// Moving what the post-run audit judged out of git's way, under a name the command could not
// have taken in advance: NAME.sandgate-quarantine-RANDOM beside it, RANDOM being 16 hex digits
// drawn (getrandom) after the command has exited, the rename made with RENAME_NOREPLACE in the
// folder reached without links (no_follow.hpp), and drawn again if the name exists. A command
// that fills the folder with every name it can guess takes none of these (a fixed series of
// names, -1 to -999, could all be made in advance, and the planted `.git` then stayed in place).
// A name beside the original, not a folder made for it: renaming needs no new inode, so a
// command that filled the file system does not keep it in place either.
//
// What cannot be moved (a mount point, a folder the user may not write) is made unreadable
// instead (mode 0: git, editors and shells cannot read it, unless they run as root) and the
// caller says so loudly. Never an inode another name shares: a file with more than one name (a
// hard link the command made to the user's Makefile or pack) keeps its mode, for mode 0 would
// take the user's own file away; the caller names it as not neutralised. The mode is set on the
// inode the audit opened (O_PATH, no link followed) and looked at, never through the name again.
// Linux only; thread-safe.
#pragma once

#include <string>

namespace sandgate::sandbox {

// What was done when the entry could not be moved.
enum class Fallback : unsigned char {
  none,       // moved, or missing: nothing else was done
  locked,     // made unreadable (mode 0)
  hard_link,  // left as it is: a file with other names (`names`), which mode 0 would reach too
  failed,     // mode 0 could not be set (a symbolic link has no mode of its own)
};

struct MovedAside {
  std::string target;  // where it is now; "" when it could not be moved
  int error = 0;       // why it could not be moved (errno); 0 when it was, ENOENT when missing
  Fallback fallback = Fallback::none;
  unsigned long names = 0;  // Fallback::hard_link: how many names its file has
};

// Moves `path` (absolute, resolved, never followed if it is a link) aside as described above.
MovedAside move_aside(const std::string& path);

}  // namespace sandgate::sandbox
