// New `.git` entries moved aside after a run. See git_quarantine.hpp.
#include "sandbox-profile/audit/git_quarantine.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "sandbox-profile/supervisor/run_support.hpp"

namespace sandgate::sandbox {
namespace {

namespace fs = std::filesystem;

// Names git itself makes at the top of a git folder. Anything else that appears there during a
// run (commondir, gitdir, config.worktree, a new modules/ or worktrees/) is quarantined.
bool git_makes(const std::string& name) {
  static const char* const kNames[] = {"index",
                                       "HEAD",
                                       "ORIG_HEAD",
                                       "FETCH_HEAD",
                                       "MERGE_HEAD",
                                       "MERGE_MSG",
                                       "MERGE_MODE",
                                       "MERGE_RR",
                                       "AUTO_MERGE",
                                       "CHERRY_PICK_HEAD",
                                       "REVERT_HEAD",
                                       "REBASE_HEAD",
                                       "BISECT_LOG",
                                       "BISECT_START",
                                       "BISECT_TERMS",
                                       "BISECT_EXPECTED_REV",
                                       "BISECT_ANCESTORS_OK",
                                       "BISECT_NAMES",
                                       "BISECT_RUN",
                                       "BISECT_HEAD",
                                       "COMMIT_EDITMSG",
                                       "SQUASH_MSG",
                                       "TAG_EDITMSG",
                                       "NOTES_EDITMSG",
                                       "NOTES_MERGE_PARTIAL",
                                       "NOTES_MERGE_REF",
                                       "packed-refs",
                                       "shallow",
                                       "description",
                                       "gc.pid",
                                       "gc.log",
                                       "objects",
                                       "refs",
                                       "logs",
                                       "info",
                                       "rebase-merge",
                                       "rebase-apply",
                                       "sequencer",
                                       "rr-cache",
                                       "lost-found",
                                       "branches"};
  for (const char* known : kNames) {
    if (name == known) {
      return true;
    }
  }
  return name.ends_with(".lock") || name.starts_with("NOTES_MERGE_");
}

constexpr std::size_t kEntryLimit = 1000000;
constexpr std::size_t kGitfileLimit = 4096;  // a gitfile is one line; more is not a gitfile

// A folder git would take for a git folder: a HEAD, and objects/ or a commondir to find them.
bool repository_shaped(const fs::path& folder) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(folder / "HEAD", ec)) &&
         (fs::exists(fs::symlink_status(folder / "objects", ec)) ||
          fs::exists(fs::symlink_status(folder / "commondir", ec)));
}

// The first `limit` bytes of a regular file (one byte more tells "longer"), never following a
// link and never waiting on a FIFO the command may have put there; "?" if it cannot be read.
std::string read_prefix(const fs::path& path, std::size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return "?";
  }
  std::string text;
  char buffer[65536];
  ssize_t got = 0;
  while (text.size() <= limit && (got = ::read(fd, buffer, sizeof buffer)) > 0) {
    text.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(fd);
  text.resize(std::min(text.size(), limit + 1));
  return text;
}

// The scanned folders: `.git` entries (gitfiles with their content) and repository-shaped
// folders, the folders themselves included.
void scan_working_folders(const std::vector<std::string>& folders, GitSnapshot& out,
                          std::size_t& seen) {
  for (const auto& folder : folders) {
    std::error_code ec;
    const auto note_dot_git = [&out](const fs::path& path) {
      out.dot_gits.insert(path.string());
      std::error_code ignored;
      if (fs::is_regular_file(fs::symlink_status(path, ignored))) {
        out.gitfiles[path.string()] = read_prefix(path, kGitfileLimit);
      }
    };
    if (fs::exists(fs::symlink_status(folder + "/.git", ec))) {
      note_dot_git(folder + "/.git");
    }
    if (repository_shaped(folder)) {
      out.repositories.insert(folder);
    }
    fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (++seen > kEntryLimit) {
        out.complete = false;
        return;
      }
      const fs::path& path = it->path();
      if (path.filename() == "HEAD" && repository_shaped(path.parent_path())) {
        out.repositories.insert(path.parent_path().string());  // a HEAD that is a link counts
      }
      if (path.filename() == ".git") {
        note_dot_git(path);
        it.disable_recursion_pending();
      } else if (it->is_symlink(ec)) {
        it.disable_recursion_pending();
      }
    }
  }
}

// The repository's git folders, whole: links (with their targets), repository-shaped folders
// below the top (submodules' git folders), and the entries git's layout gives a meaning to.
void scan_git_dirs(const std::vector<std::string>& git_dirs, GitSnapshot& out, std::size_t& seen) {
  for (const auto& dir : git_dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      out.git_entries.insert(it->path().string());
    }
    for (const char* group : {"/modules", "/worktrees"}) {
      ec.clear();
      for (fs::directory_iterator it(dir + group, ec); !ec && it != fs::directory_iterator();
           it.increment(ec)) {
        out.git_entries.insert(it->path().string());
      }
    }
    ec.clear();
    fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (++seen > kEntryLimit) {
        out.complete = false;
        return;
      }
      const fs::path& path = it->path();
      if (path.filename() == "HEAD" && path.parent_path() != dir &&
          repository_shaped(path.parent_path())) {
        out.repositories.insert(path.parent_path().string());
      }
      if (it->is_symlink(ec)) {
        std::error_code ignored;
        out.links[path.string()] = fs::read_symlink(path, ignored).string();
        it.disable_recursion_pending();
      }
    }
  }
}

// What git obeys in a git folder: its config, the attributes that pick filters, its hooks, and
// the state of a rebase, cherry-pick or revert in progress (a todo list whose `exec` lines run
// at `git rebase --continue`). Recorded with their content, to be compared after the run.
constexpr const char* kObeyedFiles[] = {"config", "config.worktree", "info/attributes"};
constexpr const char* kObeyedFolders[] = {"hooks", "rebase-merge", "rebase-apply", "sequencer"};
constexpr std::size_t kObeyedLimit = 1 << 20;  // bytes of one file compared; more: size only

// A file's content for comparison; over the limit, its size stands for it.
std::string content_of(const fs::path& path) {
  std::string text = read_prefix(path, kObeyedLimit);
  if (text.size() > kObeyedLimit) {
    std::error_code ec;
    return "size " + std::to_string(fs::file_size(path, ec));
  }
  return text;
}

void record_obeyed(const std::string& git_dir, std::map<std::string, std::string>& out) {
  std::error_code ec;
  for (const char* name : kObeyedFiles) {
    const fs::path path = fs::path(git_dir) / name;
    if (fs::is_regular_file(fs::symlink_status(path, ec))) {
      out[path.string()] = content_of(path);
    }
  }
  for (const char* name : kObeyedFolders) {
    ec.clear();
    std::size_t count = 0;
    fs::recursive_directory_iterator it(fs::path(git_dir) / name,
                                        fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator() && ++count < 4096; it.increment(ec)) {
      if (it->is_regular_file(ec)) {
        out[it->path().string()] = content_of(it->path());
      }
    }
  }
}

// Renames `path` to PATH.sandgate-quarantine-N; returns the new name, or "" (errno set).
std::string move_aside(const std::string& path) {
  for (int n = 1; n < 1000; ++n) {
    const std::string target = path + ".sandgate-quarantine-" + std::to_string(n);
    std::error_code ec;
    if (fs::exists(fs::symlink_status(target, ec))) {
      continue;
    }
    return ::rename(path.c_str(), target.c_str()) == 0 ? target : std::string();
  }
  errno = EEXIST;
  return {};
}

// Moves `path` aside and says why; appends what was done to `actions`.
void quarantine(const std::string& path, const std::string& why,
                std::vector<std::string>& actions) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) {
    return;  // already moved with a folder above it
  }
  const std::string target = move_aside(path);
  if (target.empty()) {
    say("WARNING: the command " + why + ": " + path + ", which git would obey, could not be " +
        "moved aside (" + std::strerror(errno) + "): remove it before running git there");
    return;
  }
  say("WARNING: the command " + why + ": " + path +
      " (git would obey it the next time it runs there: hooks, core.fsmonitor, or a write "
      "through a link) was moved to " +
      target + ". Look at it before you use it.");
  actions.push_back(path + " -> " + target);
}

// A file git obeys that the command changed (a gitfile, a config, a hook): its version is moved
// aside and the original written back (a file over the compared size is only moved aside).
void restore_file(const std::string& path, const std::string& original, const std::string& what,
                  std::vector<std::string>& actions) {
  const std::string target = move_aside(path);
  if (target.empty() && errno != ENOENT) {
    say("WARNING: the command " + what + " " + path + " and it could not be moved aside (" +
        std::strerror(errno) + "): check it before running git there");
    return;
  }
  if (original.starts_with("size ") || original == "?") {
    say("WARNING: the command " + what + " " + path + ": its version was moved to " + target +
        "; the original was too large to keep, restore it yourself");
    actions.push_back(path + " -> " + target);
    return;
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  const bool written = fd >= 0 && ::write(fd, original.data(), original.size()) ==
                                      static_cast<ssize_t>(original.size());
  if (fd >= 0) {
    ::close(fd);
  }
  say("WARNING: the command " + what + " " + path +
      (target.empty() ? std::string(" (removed it)") : " (its version moved to " + target + ")") +
      (written ? ": the original was written back" : ": the original could not be written back"));
  actions.push_back(path + " restored");
}

// The rebase-merge, rebase-apply or sequencer folder that `path` lies in, when that folder is
// new (none of its files was recorded before); "" otherwise.
std::string new_state_folder(const std::string& path,
                             const std::map<std::string, std::string>& before) {
  for (fs::path up = fs::path(path).parent_path(); up.has_relative_path(); up = up.parent_path()) {
    const std::string name = up.filename().string();
    if (name != "rebase-merge" && name != "rebase-apply" && name != "sequencer") {
      continue;
    }
    const std::string prefix = up.string() + "/";
    const auto at = before.lower_bound(prefix);
    const bool existed = at != before.end() && at->first.starts_with(prefix);
    return existed ? std::string() : up.string();
  }
  return {};
}

bool top_of(const std::string& path, const std::vector<std::string>& git_dirs) {
  const std::string parent = fs::path(path).parent_path().string();
  return std::find(git_dirs.begin(), git_dirs.end(), parent) != git_dirs.end();
}

}  // namespace

GitSnapshot snapshot_git(const std::vector<std::string>& folders,
                         const std::vector<std::string>& git_dirs) {
  GitSnapshot out;
  std::size_t seen = 0;
  scan_working_folders(folders, out, seen);
  scan_git_dirs(git_dirs, out, seen);
  // Every git folder there is: the repository's, nested repositories' `.git` folders (a clone
  // in third_party/, not a submodule), bare ones, and submodules' below modules/.
  std::set<std::string> all(git_dirs.begin(), git_dirs.end());
  for (const auto& path : out.dot_gits) {
    if (!out.gitfiles.contains(path)) {
      all.insert(path);
    }
  }
  all.insert(out.repositories.begin(), out.repositories.end());
  for (const auto& dir : all) {
    record_obeyed(dir, out.obeyed);
  }
  return out;
}

std::vector<std::string> quarantine_new_git_entries(const GitSnapshot& before,
                                                    const std::vector<std::string>& folders,
                                                    const std::vector<std::string>& git_dirs) {
  const GitSnapshot after = snapshot_git(folders, git_dirs);
  std::vector<std::string> actions;
  // Gitfiles first: one the command re-pointed is put back, not merely moved.
  for (const auto& [path, original] : before.gitfiles) {
    const auto now = after.gitfiles.find(path);
    if (after.dot_gits.contains(path) && (now == after.gitfiles.end() || now->second != original)) {
      restore_file(path, original, "changed the gitfile", actions);
    }
  }
  for (const auto& path : after.dot_gits) {
    if (!before.dot_gits.contains(path)) {
      quarantine(path, "created a .git", actions);
    }
  }
  for (const auto& path : after.git_entries) {
    if (!before.git_entries.contains(path) &&
        (!top_of(path, git_dirs) || !git_makes(fs::path(path).filename().string()))) {
      quarantine(path, "created an entry in the git folder", actions);
    }
  }
  // In every git folder: what git obeys, changed (put back, the command's version kept aside)
  // or new (moved aside); a rebase or sequencer state begun by the command, moved aside whole.
  for (const auto& [path, content] : after.obeyed) {
    const auto old = before.obeyed.find(path);
    if (old == before.obeyed.end()) {
      continue;  // new: judged below
    }
    if (old->second != content) {
      restore_file(path, old->second, "changed", actions);
    }
  }
  std::set<std::string> new_states;
  for (const auto& [path, content] : after.obeyed) {
    if (before.obeyed.contains(path)) {
      continue;
    }
    if (const std::string state = new_state_folder(path, before.obeyed); !state.empty()) {
      new_states.insert(state);
    } else {
      quarantine(path, "added to what git obeys", actions);
    }
  }
  for (const auto& state : new_states) {
    quarantine(state, "left a rebase or cherry-pick in progress (its todo list runs `exec` lines)",
               actions);
  }
  for (const auto& [path, target] : after.links) {
    const auto old = before.links.find(path);
    if (old == before.links.end() || old->second != target) {
      quarantine(path, "left a symbolic link in the git folder (to " + target + ")", actions);
    }
  }
  for (const auto& folder : after.repositories) {
    if (before.repositories.contains(folder)) {
      continue;
    }
    const bool inside_git_dir =
        std::any_of(git_dirs.begin(), git_dirs.end(),
                    [&folder](const std::string& dir) { return folder.starts_with(dir + "/"); });
    if (inside_git_dir) {
      quarantine(folder, "hid a git folder in the git folder", actions);
      continue;
    }
    for (const char* name : {"/HEAD", "/config"}) {
      quarantine(folder + name, "made a folder into a git repository", actions);
    }
  }
  return actions;
}

}  // namespace sandgate::sandbox
