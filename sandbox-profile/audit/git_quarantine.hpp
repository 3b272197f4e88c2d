// After a confined run: what the command planted for the user's next git command is moved aside
// (or, for a gitfile it re-pointed, put back) and named loudly. git runs a repository's
// core.fsmonitor, hooks and aliases, and writes its message files through whatever is at their
// path, so every one of these is judged by type and content, not by name:
//   - a new `.git` (a git folder, or a `gitdir:` file) anywhere in the working folder or an
//     --allow-write folder;
//   - a new folder shaped like a git folder (a HEAD beside objects/ or a commondir) that is not a
//     `.git`: `git init --bare .` in the working folder itself, or a copy hidden in a subfolder;
//     its HEAD and config are moved aside, so that git no longer takes it for a repository;
//   - a `.git` file (a submodule's or a linked worktree's gitfile) whose content changed: the
//     command's version is moved aside and the original written back;
//   - in every git folder (the repository's, a nested clone's, a bare one's, a submodule's): its
//     config, config.worktree, info/attributes and hooks, changed (put back as they were, the
//     command's version kept aside) or new (moved aside), and a rebase, cherry-pick or revert
//     the command left in progress (its todo list runs `exec` lines at --continue: moved aside);
//   - in the repository's git folders: a new entry at the top that git does not make itself
//     (commondir, gitdir, config.worktree), a new modules/ or worktrees/ entry, a new
//     folder shaped like a git folder at any depth, and a symbolic link, at any depth, that is
//     new or points elsewhere than before (COMMIT_EDITMSG -> ~/.bashrc: git would write through
//     it).
// Internal to `sandgate run`.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace sandgate::sandbox {

// What is checked again after the run. Stops after a million entries (a warning then).
struct GitSnapshot {
  std::set<std::string> dot_gits;               // every `.git` entry in the scanned folders
  std::map<std::string, std::string> gitfiles;  // `.git` files: path -> content
  std::set<std::string> repositories;           // folders shaped like a git folder
  std::set<std::string> git_entries;            // top, modules/ and worktrees/ entries
  std::map<std::string, std::string> links;     // links in the git folders: path -> target
  // In every git folder found (the repository's, nested and bare ones, submodules'): config,
  // config.worktree, info/attributes, hooks, and rebase or sequencer state: path -> content.
  std::map<std::string, std::string> obeyed;
  bool complete = true;
};

// `folders`: searched for `.git` entries and repository-shaped folders (not following links,
// not entering `.git`); `git_dirs`: the repository's git folders, searched whole.
GitSnapshot snapshot_git(const std::vector<std::string>& folders,
                         const std::vector<std::string>& git_dirs);

// After the command: compares with `before`, moves aside (as NAME.sandgate-quarantine-N) or puts
// back what is listed above, says so on standard error with the path and what was done, and
// returns one line per action.
std::vector<std::string> quarantine_new_git_entries(const GitSnapshot& before,
                                                    const std::vector<std::string>& folders,
                                                    const std::vector<std::string>& git_dirs);

}  // namespace sandgate::sandbox
