// After a confined run: what the command planted for the user's next git command is moved aside
// (or, for a file it changed, put back) and named loudly. git runs a repository's
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
//     config, config.worktree, info/attributes, info/exclude, info/sparse-checkout and hooks,
//     changed (put back as they were, the command's version kept aside) or new (moved aside),
//     and a rebase, cherry-pick or revert the command left in progress (its todo list runs
//     `exec` lines at --continue: moved aside);
//   - the hooks folder core.hooksPath names and the files include.path names, wherever they are
//     (husky's `.husky/_` in the working folder): found before the run, judged as hooks;
//   - in the repository's git folders: a new entry at the top that git does not make itself
//     (commondir, gitdir, config.worktree), a new modules/ or worktrees/ entry, a new
//     folder shaped like a git folder at any depth, and a symbolic link, at any depth, that is
//     new or points elsewhere than before (COMMIT_EDITMSG -> ~/.bashrc: git would write through
//     it).
// And it reports, without moving them: index entries that became skip-worktree or
// assume-unchanged (git status and git diff no longer show their changes), and the files that
// tools run or trust (auto_run_files.hpp: .envrc, .vscode/tasks.json, .cargo/config.toml, ...),
// at any depth of the working folders, that are new or changed, whatever their type: a link at
// one of their names (or at a folder on the way, `sub/.vscode -> ../assets`) with where it leads
// and the files tools would read there; a new one at the top of a working folder loudly.
//
// What is moved goes beside it under a name drawn after the run (move_aside.hpp); what cannot
// be moved is made unreadable and listed in GitAudit::unmoved. A new worktrees/ entry that the
// user made outside during the run (added_worktrees.hpp) is not judged.
//
// Complete, or loudly not: the repository's git folders are scanned first, each on its own
// budget, the object store last; the working folders after, on theirs. Nothing is followed
// through a link (no_follow.hpp). A scan that stops short is said so, and a git folder whose
// scan stopped short after the run but not before it (the command padded it) is moved aside
// whole, so that git does not run there until the user has looked.
// Internal to `sandgate run`.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sandbox-profile/audit/git_audit.hpp"
#include "sandbox-profile/plan/git_config_targets.hpp"

namespace sandgate::sandbox {

// How many entries one scan looks at before it stops (then the snapshot says it is incomplete).
struct AuditLimits {
  std::size_t entries_per_git_dir = 4'000'000;
  std::size_t entries_per_folder = 4'000'000;
};

// A symbolic link at a name tools look up (auto_run_files.hpp: `sub/.vscode -> ../assets`), and
// what a tool finds through it. Read only inside the scanned folder it is in, and never through
// a further link.
struct AutoRunLink {
  enum class Leads : unsigned char {
    inside,        // into the scanned folder: `reached`, and what it holds
    outside,       // out of the scanned folder: not read
    nowhere,       // to nothing (yet)
    through_link,  // to or through another link: not followed
  };
  std::string target;  // as the link says it
  Leads leads = Leads::nowhere;
  std::string reached;  // where it leads, absolute and normal
  // The files tools read there, by their path below the link ("" for the target itself when it
  // is a file): path -> content.
  std::map<std::string, std::string> holds;
  bool operator==(const AutoRunLink&) const = default;
};

// What is checked again after the run.
struct GitSnapshot {
  std::set<std::string> dot_gits;               // every `.git` entry in the scanned folders
  std::map<std::string, std::string> gitfiles;  // `.git` files: path -> content
  std::set<std::string> repositories;           // folders shaped like a git folder
  std::set<std::string> git_entries;            // top, modules/ and worktrees/ entries
  std::map<std::string, std::string> links;     // links in the git folders: path -> target
  // In every git folder found (the repository's, nested and bare ones, submodules'): config,
  // config.worktree, info/attributes, info/exclude, hooks, and rebase or sequencer state, and
  // the hooks folders and included files the configuration names: path -> content.
  std::map<std::string, std::string> obeyed;
  // Found before the run (and kept for the check after it): core.hooksPath folders and
  // include.path files.
  std::vector<std::string> hook_folders;
  std::vector<std::string> included_files;
  // Index entries git status does not look at, per index file: "index\tskip-worktree\tPATH".
  std::set<std::string> hidden_index_entries;
  // Files tools run or trust in the working folders: path -> content.
  std::map<std::string, std::string> auto_run;
  // Links at the names tools look up in the working folders: path -> where they lead.
  std::map<std::string, AutoRunLink> auto_run_links;
  // The scans that stopped short: the folder scanned -> where it stopped.
  std::map<std::string, std::string> incomplete;
  bool complete() const { return incomplete.empty(); }
};

// `folders`: searched for `.git` entries and repository-shaped folders (not following links,
// not entering `.git`); `git_dirs`: the repository's git folders, searched whole; `targets`: what
// their configuration names outside them, found before the run (git_config_targets()).
GitSnapshot snapshot_git(const std::vector<std::string>& folders,
                         const std::vector<std::string>& git_dirs, const GitConfigTargets& targets,
                         const AuditLimits& limits = {});

// After the command: compares with `before`, moves aside (move_aside.hpp) or puts back what is
// listed above, says so on standard error with the path and what was done, and
// returns it all.
GitAudit quarantine_new_git_entries(const GitSnapshot& before,
                                    const std::vector<std::string>& folders,
                                    const std::vector<std::string>& git_dirs,
                                    const AuditLimits& limits = {});

}  // namespace sandgate::sandbox
