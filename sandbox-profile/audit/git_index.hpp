// The entries of a git index (`.git/index`) that `git status` and `git diff` do not look at:
// skip-worktree (`git update-index --skip-worktree`, sparse checkout) and assume-unchanged
// (`--assume-unchanged`). A command that sets either on a file it changed hides the change from
// the user's review; the post-run audit names every entry that gained one during the run.
// Index versions 2, 3 and 4 (path compression), SHA-1 or SHA-256 object names. Pure;
// thread-safe.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>

namespace sandgate::sandbox {

struct HiddenIndexEntries {
  std::set<std::string> skip_worktree;
  std::set<std::string> assume_unchanged;
  bool parsed = false;  // false: not an index this reader knows (then both sets are empty)
};

// `bytes`: the index file; `hash_size`: 20 (SHA-1) or 32 (SHA-256).
HiddenIndexEntries hidden_index_entries(std::string_view bytes, std::size_t hash_size);

}  // namespace sandgate::sandbox
