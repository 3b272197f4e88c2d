// What a repository's git configuration points git at outside its git folder, found before the
// command starts: the hooks folder of core.hooksPath (husky's git-ignored `.husky/_`, a
// `.githooks` in the working folder) and the files of include.path and includeIf.*.path. The
// user's next git runs what is there, so `run` makes the ones that exist read-only for the run
// and compares them after it (audit/git_quarantine.hpp), whatever the command did to the
// configuration meanwhile (it is read-only too).
//
// Only what git reads matters, so the reader is git's format, kept small: sections (`[core]`,
// `[includeIf "gitdir:..."]`, `[core.sub]`), names and values case as git compares them, quoted
// values and escapes, comments, continued lines. Every includeIf's path is taken whatever its
// condition (a condition may hold later). Pure apart from git_config_targets(), which reads the
// file system; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sandgate::sandbox {

// Every value of `section.key` in a config file's `text`, in order (`section` and `key` compared
// without case; `section` may be "includeif", which matches every `[includeIf "..."]`). A key
// without `=` has the value "true".
std::vector<std::string> git_config_values(std::string_view text, std::string_view section,
                                           std::string_view key);

struct GitConfigTargets {
  std::vector<std::string> hook_folders;    // core.hooksPath, absolute and normal
  std::vector<std::string> included_files;  // include targets, absolute and normal
};

// For the repository whose git folders are `git_dirs` (as enclosing_git_dirs() finds them) and
// whose working tree's top is `worktree_top` ("" if bare): the targets named in its config and
// config.worktree, in `home`'s ~/.gitconfig and ~/.config/git/config, and in the files those
// include (up to 10 deep, as git). Relative hooks folders are taken from the working tree's
// top (from the git folder when bare), relative includes from the including file's folder, `~/`
// from `home` ("": the user's files are not read, `~/` is left as it is). Reads the file system.
GitConfigTargets git_config_targets(const std::vector<std::string>& git_dirs,
                                    const std::string& worktree_top, const std::string& home);

}  // namespace sandgate::sandbox
