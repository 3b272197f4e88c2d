// Linked worktrees the user added outside the sandbox while the command ran (`git worktree add
// ../feature` in another terminal): git makes an entry for each under the common git folder's
// worktrees/, where the command could have made one too (the git folder is writable inside),
// so the audit would take the user's for the command's and move it aside. They are told apart
// by what the command could not write: the worktree's gitfile (`../feature/.git`), which lies
// outside every folder writable inside and points back at the entry. The entry must also hold
// the commondir git writes (../..): one re-pointed at another repository is judged as any other.
// Linux only; reads the file system without following links (no_follow.hpp); thread-safe.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace sandgate::sandbox {

// Of `new_entries` (GITDIR/worktrees/NAME, new since the run began), those whose worktree's
// gitfile lies outside every folder in `writable` (the working and --allow-write folders and
// the git folders) and names the entry, and whose commondir is git's.
std::set<std::string> worktrees_added_outside(const std::set<std::string>& new_entries,
                                              const std::vector<std::string>& writable);

}  // namespace sandgate::sandbox
