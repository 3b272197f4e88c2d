// After a confined run: a new `.git` (a git folder or a `gitdir:` file in a subfolder runs its
// core.fsmonitor, hooks and aliases at the user's next git command there), or a new entry in the
// repository's git folders that git does not make itself, is moved aside and named loudly.
// Internal to `sandgate run`.
#pragma once

#include <string>
#include <vector>

namespace sandgate::sandbox {

// The `.git` entries below each folder (not following links, not entering git folders), and
// the entries at the top of each git folder. Stops after `limit` entries (a warning then).
struct GitSnapshot {
  std::vector<std::string> dot_gits;
  std::vector<std::string> git_entries;
  bool complete = true;
};

GitSnapshot snapshot_git(const std::vector<std::string>& folders,
                         const std::vector<std::string>& git_dirs);

// After the command: every `.git` that was not there before (a git folder or a `gitdir:` file
// in a subfolder runs its core.fsmonitor, hooks and aliases at the user's next git command
// there), and every new entry in the repository's git folders that git does not make itself,
// is renamed to NAME.sandgate-quarantine-N and named loudly. Returns what was moved.
std::vector<std::string> quarantine_new_git_entries(const GitSnapshot& before,
                                                    const std::vector<std::string>& folders,
                                                    const std::vector<std::string>& git_dirs);

}  // namespace sandgate::sandbox
