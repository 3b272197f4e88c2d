// What a command left for the user's next git command, moved aside after the run. See
// git_quarantine.hpp.
#include "sandbox-profile/audit/git_quarantine.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string_view>

#include "sandbox-profile/audit/added_worktrees.hpp"
#include "sandbox-profile/audit/git_index.hpp"
#include "sandbox-profile/audit/move_aside.hpp"
#include "sandbox-profile/audit/no_follow.hpp"
#include "sandbox-profile/plan/auto_run_files.hpp"
#include "sandbox-profile/plan/git_config_targets.hpp"
#include "sandbox-profile/plan/protected_paths.hpp"
#include "sandbox-profile/supervisor/run_support.hpp"

namespace sandgate::sandbox {
namespace {

namespace fs = std::filesystem;

// Names git itself makes at the top of a git folder. Anything else that appears there during a
// run (commondir, gitdir, config.worktree) is quarantined; in modules/ and worktrees/ (made by
// the first `git submodule add` or `git worktree add`) each new entry is judged.
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
                                       "branches",
                                       "modules",
                                       "worktrees"};
  for (const char* known : kNames) {
    if (name == known) {
      return true;
    }
  }
  return name.ends_with(".lock") || name.starts_with("NOTES_MERGE_");
}

constexpr std::size_t kGitfileLimit = 4096;     // a gitfile is one line; more is not a gitfile
constexpr std::size_t kObeyedLimit = 1 << 20;   // bytes of one file compared; more: size only
constexpr std::size_t kFilesPerFolder = 4096;   // files of one hooks or state folder compared
constexpr std::size_t kIndexLimit = 256 << 20;  // an index larger than this is not read
constexpr int kMaxDepth = 256;                  // folders deeper are not entered (incomplete)
// What a link is recorded as where a file's content is (no file's content begins with it).
constexpr std::string_view kLinkMark = "\x01link to ";

std::string join(const std::string& folder, const std::string& name) {
  return folder == "/" ? "/" + name : folder + "/" + name;
}

bool exists_at(int folder, const char* name) {
  struct stat info {};
  return ::fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0;
}

// A folder git would take for a git folder: a HEAD, and objects/ or a commondir to find them.
bool repository_shaped(int folder) {
  return exists_at(folder, "HEAD") &&
         (exists_at(folder, "objects") || exists_at(folder, "commondir"));
}

bool repository_shaped(const std::string& folder) {
  const UniqueFd fd = open_no_follow(folder, O_PATH | O_DIRECTORY);
  return fd && repository_shaped(fd.get());
}

// One entry met by walk(): its path, the folder it is in (open) and its name there.
struct Entry {
  const std::string& path;
  int folder;
  const char* name;
  unsigned char type;  // DT_DIR, DT_REG, DT_LNK, ...
};
enum class Step : unsigned char { descend, skip };

// Visits every entry below `root`, depth first, never through a link (a link is an entry, never
// a folder), taking one from `budget` for each. Returns "" when all were visited, else where it
// stopped (the budget ran out, a folder too deep, a folder that could not be read).
std::string walk(const std::string& root, std::size_t& budget,
                 const std::function<Step(const Entry&)>& visit) {
  struct Frame {
    DIR* dir;
    std::string path;
  };
  UniqueFd top = open_no_follow(root, O_RDONLY | O_DIRECTORY);
  if (!top) {
    return errno == ENOENT ? std::string() : root;
  }
  std::vector<Frame> stack;
  DIR* first = ::fdopendir(top.get());
  if (first == nullptr) {
    return root;
  }
  top.release();
  stack.push_back({first, root});
  std::string stopped;
  while (!stack.empty() && stopped.empty()) {
    Frame& frame = stack.back();
    errno = 0;
    const dirent* entry = ::readdir(frame.dir);
    if (entry == nullptr) {
      stopped = errno != 0 ? frame.path : std::string();
      ::closedir(frame.dir);
      stack.pop_back();
      continue;
    }
    if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) {
      continue;
    }
    const std::string path = join(frame.path, entry->d_name);
    if (budget == 0) {
      stopped = path;
      break;
    }
    --budget;
    const int folder = ::dirfd(frame.dir);
    unsigned char type = entry->d_type;
    if (type == DT_UNKNOWN) {
      struct stat info {};
      type = ::fstatat(folder, entry->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0 ? DT_UNKNOWN
             : S_ISDIR(info.st_mode)                                           ? DT_DIR
             : S_ISLNK(info.st_mode)                                           ? DT_LNK
             : S_ISREG(info.st_mode)                                           ? DT_REG
                                                                               : DT_UNKNOWN;
    }
    if (visit(Entry{path, folder, entry->d_name, type}) != Step::descend || type != DT_DIR) {
      continue;
    }
    if (stack.size() >= kMaxDepth) {
      stopped = path;
      break;
    }
    const int below =
        ::openat(folder, entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR* dir = below < 0 ? nullptr : ::fdopendir(below);
    if (dir == nullptr) {
      if (below >= 0) {
        ::close(below);
      }
      stopped = path;
      break;
    }
    stack.push_back({dir, path});
  }
  for (auto& frame : stack) {
    ::closedir(frame.dir);
  }
  return stopped;
}

// A file's content for comparison: a link as its target, over the limit its size.
std::string content_of(const std::string& path) {
  if (const auto target = link_target(path)) {
    return std::string(kLinkMark) + *target;
  }
  std::string text = read_no_follow(path, kObeyedLimit);
  if (text.size() > kObeyedLimit) {
    const auto info = stat_no_follow(path);
    return "size " + std::to_string(info ? info->st_size : -1);
  }
  return text;
}

// Records `path` (a file, or a link where one is expected) and, when it is a folder, every file
// and link below it (up to kFilesPerFolder), with their content.
void record_files(const std::string& path, std::map<std::string, std::string>& out,
                  GitSnapshot& snapshot) {
  const auto info = stat_no_follow(path);
  if (!info) {
    return;
  }
  if (!S_ISDIR(info->st_mode)) {
    out[path] = content_of(path);
    return;
  }
  std::size_t budget = kFilesPerFolder;
  const std::string stopped = walk(path, budget, [&out](const Entry& entry) {
    if (entry.type == DT_REG || entry.type == DT_LNK) {
      out[entry.path] = content_of(entry.path);
    }
    return Step::descend;
  });
  if (!stopped.empty()) {
    snapshot.incomplete[path] = stopped;
  }
}

// What git obeys in a git folder: its config, the attributes that pick filters, the exclude file
// and sparse-checkout patterns that hide files from `git status`, its hooks, and the state of a
// rebase, cherry-pick or revert in progress (a todo list whose `exec` lines run at `git rebase
// --continue`).
constexpr const char* kObeyed[] = {"config",       "config.worktree",      "info/attributes",
                                   "info/exclude", "info/sparse-checkout", "hooks",
                                   "rebase-merge", "rebase-apply",         "sequencer"};

// SHA-256 repositories say so in their config; their index holds longer object names.
std::size_t hash_size(const std::string& git_dir) {
  for (const auto& format : git_config_values(read_no_follow(git_dir + "/config", kObeyedLimit),
                                              "extensions", "objectformat")) {
    if (format == "sha256") {
      return 32;
    }
  }
  return 20;
}

void record_hidden_index_entries(const std::string& git_dir, std::set<std::string>& out) {
  const std::string index = git_dir + "/index";
  const std::string bytes = read_no_follow(index, kIndexLimit);
  const HiddenIndexEntries hidden = hidden_index_entries(bytes, hash_size(git_dir));
  for (const auto& path : hidden.skip_worktree) {
    out.insert(index + "\tskip-worktree\t" + path);
  }
  for (const auto& path : hidden.assume_unchanged) {
    out.insert(index + "\tassume-unchanged\t" + path);
  }
}

// The repository's git folders, first and each on its own budget: the names at the top and in
// modules/ and worktrees/, links (with their targets) and repository-shaped folders at any
// depth (submodules' git folders, copies hidden in logs/); the object store last, so that
// filling it cannot keep the rest from being seen.
void scan_git_dirs(const std::vector<std::string>& git_dirs, const AuditLimits& limits,
                   GitSnapshot& out) {
  for (const auto& dir : git_dirs) {
    std::size_t budget = limits.entries_per_git_dir;
    const std::string objects = dir + "/objects";
    const auto visit = [&](const Entry& entry) {
      const std::string parent = fs::path(entry.path).parent_path().string();
      if (parent == dir || parent == dir + "/modules" || parent == dir + "/worktrees") {
        out.git_entries.insert(entry.path);
      }
      if (entry.path == objects) {
        return Step::skip;  // below, after the rest
      }
      if (std::strcmp(entry.name, "HEAD") == 0 && parent != dir &&
          repository_shaped(entry.folder)) {
        out.repositories.insert(parent);
      }
      if (entry.type == DT_LNK) {
        out.links[entry.path] = link_target(entry.path).value_or("?");
      }
      return Step::descend;
    };
    std::string stopped = walk(dir, budget, visit);
    if (stopped.empty()) {
      stopped = walk(objects, budget, visit);
    }
    if (!stopped.empty()) {
      out.incomplete[dir] = stopped;
    }
  }
}

// The files tools run or trust at any depth below a scanned folder (auto_run_files.hpp), met by
// its walk: a listed file, or any file below a listed folder, with their content. Bounded in
// files and bytes: beyond them, the folder is said not to be checked whole.
class AutoRunFinder {
 public:
  AutoRunFinder(const std::string& folder, std::map<std::string, std::string>& out)
      : skip_(folder == "/" ? 1 : folder.size() + 1), out_(out) {}

  void visit(const Entry& entry) {
    const std::string_view path = entry.path;
    const std::string_view relative = path.substr(skip_);
    const bool below_listed = listed_folders_.contains(path.substr(0, path.rfind('/')));
    if (entry.type == DT_DIR) {
      if (below_listed || is_auto_run_folder(relative)) {
        listed_folders_.insert(entry.path);
      }
      return;
    }
    if ((entry.type != DT_REG && entry.type != DT_LNK) ||
        (!below_listed && !is_auto_run_file(relative)) || !stopped_.empty()) {
      return;
    }
    std::string content = content_of(entry.path);
    if (++files_ > kAutoRunFiles || (bytes_ += content.size()) > kAutoRunBytes) {
      stopped_ = entry.path;
      return;
    }
    out_[entry.path] = std::move(content);
  }
  // Where the bounds were reached; "" if they were not.
  const std::string& stopped() const { return stopped_; }

 private:
  static constexpr std::size_t kAutoRunFiles = 4096;
  static constexpr std::size_t kAutoRunBytes = 64 << 20;
  std::size_t skip_;
  std::map<std::string, std::string>& out_;
  std::set<std::string, std::less<>> listed_folders_;
  std::size_t files_ = 0;
  std::size_t bytes_ = 0;
  std::string stopped_;
};

// The scanned folders, after the git folders and each on its own budget: `.git` entries
// (gitfiles with their content, links with their target) and repository-shaped folders, the
// folders themselves included.
void scan_working_folders(const std::vector<std::string>& folders, const AuditLimits& limits,
                          GitSnapshot& out) {
  const auto note_dot_git = [&out](const std::string& path, unsigned char type) {
    out.dot_gits.insert(path);
    if (type == DT_REG) {
      out.gitfiles[path] = read_no_follow(path, kGitfileLimit);
    } else if (type == DT_LNK) {
      out.links[path] = link_target(path).value_or("?");
    }
  };
  for (const auto& folder : folders) {
    if (const auto info = stat_no_follow(folder + "/.git")) {
      note_dot_git(folder + "/.git", S_ISREG(info->st_mode)   ? DT_REG
                                     : S_ISLNK(info->st_mode) ? DT_LNK
                                                              : DT_DIR);
    }
    if (repository_shaped(folder)) {
      out.repositories.insert(folder);
    }
    std::size_t budget = limits.entries_per_folder;
    AutoRunFinder auto_run(folder, out.auto_run);
    std::string stopped = walk(folder, budget, [&](const Entry& entry) {
      auto_run.visit(entry);
      if (std::strcmp(entry.name, "HEAD") == 0 && repository_shaped(entry.folder)) {
        out.repositories.insert(fs::path(entry.path).parent_path().string());
      }
      if (std::strcmp(entry.name, ".git") == 0) {
        if (entry.path != folder + "/.git") {
          note_dot_git(entry.path, entry.type);
        }
        return Step::skip;
      }
      return Step::descend;
    });
    if (stopped.empty()) {
      stopped = auto_run.stopped();
    }
    if (!stopped.empty()) {
      out.incomplete[folder] = stopped;
    }
    // The top's, again on a budget of their own: a padded folder does not hide them.
    for (const auto& path : auto_run_paths(folder)) {
      record_files(path.path, out.auto_run, out);
    }
  }
}

// Every git folder there is: the repository's, nested repositories' `.git` folders (a clone
// in third_party/, not a submodule), bare ones, and submodules' below modules/.
std::set<std::string> git_folders(const GitSnapshot& snapshot,
                                  const std::vector<std::string>& git_dirs) {
  std::set<std::string> all(git_dirs.begin(), git_dirs.end());
  for (const auto& path : snapshot.dot_gits) {
    if (!snapshot.gitfiles.contains(path) && !snapshot.links.contains(path)) {
      all.insert(path);
    }
  }
  all.insert(snapshot.repositories.begin(), snapshot.repositories.end());
  return all;
}

// The names git runs from a hooks folder (githooks(5)).
bool hook_name(std::string_view name) {
  static constexpr std::string_view kHooks[] = {"applypatch-msg",
                                                "pre-applypatch",
                                                "post-applypatch",
                                                "pre-commit",
                                                "pre-merge-commit",
                                                "prepare-commit-msg",
                                                "commit-msg",
                                                "post-commit",
                                                "pre-rebase",
                                                "post-checkout",
                                                "post-merge",
                                                "pre-push",
                                                "pre-receive",
                                                "update",
                                                "proc-receive",
                                                "post-receive",
                                                "post-update",
                                                "reference-transaction",
                                                "push-to-checkout",
                                                "pre-auto-gc",
                                                "post-rewrite",
                                                "sendemail-validate",
                                                "fsmonitor-watchman",
                                                "p4-changelist",
                                                "p4-prepare-changelist",
                                                "p4-post-changelist",
                                                "p4-pre-submit",
                                                "post-index-change"};
  return std::find(std::begin(kHooks), std::end(kHooks), name) != std::end(kHooks);
}

// A hooks folder core.hooksPath names: all of it (husky's scripts source helpers beside the
// hooks), except when it holds a scanned folder or a git folder (core.hooksPath = .): then only
// the hooks at its top, so that the work in the folder is not taken for hooks.
void record_hooks_folder(const std::string& folder, const std::vector<std::string>& holds_not,
                         GitSnapshot& out) {
  const bool holds_work =
      std::any_of(holds_not.begin(), holds_not.end(), [&folder](const std::string& inside) {
        return inside == folder || inside.starts_with(folder == "/" ? folder : folder + "/");
      });
  if (!holds_work) {
    record_files(folder, out.obeyed, out);
    return;
  }
  std::size_t budget = kFilesPerFolder;
  const std::string stopped = walk(folder, budget, [&out](const Entry& entry) {
    if (hook_name(entry.name) && (entry.type == DT_REG || entry.type == DT_LNK)) {
      out.obeyed[entry.path] = content_of(entry.path);
    }
    return Step::skip;
  });
  if (!stopped.empty()) {
    out.incomplete[folder] = stopped;
  }
}

// The folders a hooks folder must not be taken whole from: the scanned folders and git folders.
std::vector<std::string> not_hooks(const std::vector<std::string>& folders,
                                   const std::vector<std::string>& git_dirs) {
  std::vector<std::string> out(folders.begin(), folders.end());
  out.insert(out.end(), git_dirs.begin(), git_dirs.end());
  return out;
}

// Everything but the targets of the configuration, which are found once, before the run.
GitSnapshot scan(const std::vector<std::string>& folders, const std::vector<std::string>& git_dirs,
                 std::vector<std::string> hook_folders, std::vector<std::string> included_files,
                 const AuditLimits& limits) {
  GitSnapshot out;
  out.hook_folders = std::move(hook_folders);
  out.included_files = std::move(included_files);
  scan_git_dirs(git_dirs, limits, out);
  scan_working_folders(folders, limits, out);
  for (const auto& dir : git_folders(out, git_dirs)) {
    for (const char* name : kObeyed) {
      record_files(dir + "/" + name, out.obeyed, out);
    }
    record_hidden_index_entries(dir, out.hidden_index_entries);
  }
  const std::vector<std::string> holds_not = not_hooks(folders, git_dirs);
  for (const auto& path : out.hook_folders) {
    record_hooks_folder(path, holds_not, out);
  }
  for (const auto& path : out.included_files) {
    record_files(path, out.obeyed, out);
  }
  return out;
}

// What could not be moved aside: said, listed for the exit summary, and made unreadable
// (move_aside()) so that git fails there rather than obeys it.
void could_not_move(const std::string& path, const std::string& why, const MovedAside& moved,
                    GitAudit& audit) {
  const std::string reason = std::strerror(moved.error);
  say("WARNING: the command " + why + ": " + path + ", which git would obey, could not be " +
      "moved aside (" + reason + ")" +
      (moved.locked ? "; it was made unreadable (mode 0)" : "; it could not be made unreadable") +
      ". Do not run git, an editor or a shell in " + fs::path(path).parent_path().string() +
      " until you have removed it");
  audit.unmoved.push_back(path + " (" + reason +
                          (moved.locked ? "; made unreadable)" : "; NOT made unreadable)"));
}

// Moves `path` aside and says why; appends what was done to the audit.
void quarantine(const std::string& path, const std::string& why, GitAudit& audit) {
  if (!stat_no_follow(path)) {
    return;  // already moved with a folder above it
  }
  const MovedAside moved = move_aside(path);
  if (moved.target.empty()) {
    if (moved.error != ENOENT) {
      could_not_move(path, why, moved, audit);
    }
    return;
  }
  say("WARNING: the command " + why + ": " + path +
      " (git would obey it the next time it runs there: hooks, core.fsmonitor, or a write "
      "through a link) was moved to " +
      moved.target + ". Look at it before you use it.");
  audit.actions.push_back(path + " -> " + moved.target);
}

// A file git obeys that the command changed (a gitfile, a config, a hook): its version is moved
// aside and the original written back (a file over the compared size, or a link, is only moved
// aside).
void restore_file(const std::string& path, const std::string& original, const std::string& what,
                  GitAudit& audit) {
  const MovedAside moved = move_aside(path);
  const std::string& target = moved.target;
  if (target.empty() && moved.error != ENOENT) {
    could_not_move(path, what, moved, audit);
    return;
  }
  if (original.starts_with("size ") || original == "?" || original.starts_with(kLinkMark)) {
    say("WARNING: the command " + what + " " + path + ": its version was moved to " + target +
        "; the original could not be kept, restore it yourself");
    audit.actions.push_back(path + " -> " + target);
    return;
  }
  const bool written = create_no_follow(path, original);
  say("WARNING: the command " + what + " " + path +
      (target.empty() ? std::string(" (removed it)") : " (its version moved to " + target + ")") +
      (written ? ": the original was written back" : ": the original could not be written back"));
  audit.actions.push_back(path + (written ? " restored" : " moved aside, not restored"));
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

// Index entries that git status and git diff stopped looking at during the run: named, with the
// command that shows them again. The index is git's to write; it is not changed.
void report_hidden(const GitSnapshot& before, const GitSnapshot& after, GitAudit& audit) {
  for (const auto& entry : after.hidden_index_entries) {
    if (before.hidden_index_entries.contains(entry)) {
      continue;
    }
    const auto tab = entry.find('\t');
    const auto second = entry.find('\t', tab + 1);
    const std::string index = entry.substr(0, tab);
    const std::string flag = entry.substr(tab + 1, second - tab - 1);
    const std::string file = entry.substr(second + 1);
    say("WARNING: the command marked " + file + " " + flag + " in " + index +
        ": git status and git diff do not show its changes. See them with `git update-index "
        "--no-" +
        flag + " -- '" + file + "'` before you review or commit");
    audit.hidden.push_back(file + " (" + flag + ", " + index + ")");
  }
}

// The files tools run or trust at any depth of the working folders, new, changed or removed:
// named for the user to review, not moved (they may be the work asked for).
void report_auto_run(const GitSnapshot& before, const GitSnapshot& after, GitAudit& audit) {
  for (const auto& [path, content] : after.auto_run) {
    const auto old = before.auto_run.find(path);
    const char* what = old == before.auto_run.end() ? "new"
                       : old->second != content     ? "changed"
                                                    : nullptr;
    if (what != nullptr) {
      audit.auto_run.push_back(path + " (" + what + ")");
    }
  }
  for (const auto& [path, content] : before.auto_run) {
    if (!after.auto_run.contains(path)) {
      audit.auto_run.push_back(path + " (removed)");
    }
  }
  if (!audit.auto_run.empty()) {
    say("WARNING: the command wrote files that editors, shells, package managers and agents run "
        "or trust when you open or enter their folders (review them first): " +
        [&audit] {
          std::string list;
          for (const auto& line : audit.auto_run) {
            list += (list.empty() ? "" : ", ") + line;
          }
          return list;
        }());
  }
}

// The new worktrees/ entries of the repository's git folders that the user made outside during
// the run (added_worktrees.hpp).
std::set<std::string> users_worktrees(const GitSnapshot& before, const GitSnapshot& after,
                                      const std::vector<std::string>& folders,
                                      const std::vector<std::string>& git_dirs) {
  std::set<std::string> added;
  for (const auto& path : after.git_entries) {
    const std::string parent = fs::path(path).parent_path().string();
    if (!before.git_entries.contains(path) && fs::path(parent).filename() == "worktrees" &&
        top_of(parent, git_dirs)) {
      added.insert(path);
    }
  }
  std::vector<std::string> writable(folders.begin(), folders.end());
  writable.insert(writable.end(), git_dirs.begin(), git_dirs.end());
  return worktrees_added_outside(added, writable);
}

// A scan that stopped short is never taken for a clean one: said, and a git folder whose scan
// stopped after the run though it did not before (the command filled it) is moved aside whole.
void judge_incomplete(const GitSnapshot& before, const GitSnapshot& after,
                      const std::vector<std::string>& git_dirs, GitAudit& audit) {
  for (const auto& [folder, stopped] : after.incomplete) {
    audit.incomplete.push_back(folder + " (stopped at " + stopped + ")");
    const bool git_dir = std::find(git_dirs.begin(), git_dirs.end(), folder) != git_dirs.end();
    if (git_dir && !before.incomplete.contains(folder)) {
      quarantine(folder,
                 "filled the git folder beyond what can be checked (stopped at " + stopped + ")",
                 audit);
      continue;
    }
    say("WARNING: " + folder + " could not be checked whole after the run (stopped at " + stopped +
        "): what the command left beyond that point was not looked at. Do not run git, "
        "an editor or a shell hook there before looking for new .git entries, links in git "
        "folders and hooks yourself");
  }
}

}  // namespace

GitSnapshot snapshot_git(const std::vector<std::string>& folders,
                         const std::vector<std::string>& git_dirs, const GitConfigTargets& targets,
                         const AuditLimits& limits) {
  GitSnapshot out = scan(folders, git_dirs, targets.hook_folders, targets.included_files, limits);
  const std::vector<std::string> holds_not = not_hooks(folders, git_dirs);
  // The nested repositories' own hooks folders and included files (the repository's were found
  // with the plan, and made read-only): judged after the run as theirs.
  for (const auto& dir : git_folders(out, git_dirs)) {
    if (std::find(git_dirs.begin(), git_dirs.end(), dir) != git_dirs.end()) {
      continue;
    }
    const std::string top =
        fs::path(dir).filename() == ".git" ? fs::path(dir).parent_path().string() : std::string();
    const GitConfigTargets nested = git_config_targets({dir}, top, "");
    for (const auto& path : nested.hook_folders) {
      if (std::find(out.hook_folders.begin(), out.hook_folders.end(), path) ==
          out.hook_folders.end()) {
        out.hook_folders.push_back(path);
        record_hooks_folder(path, holds_not, out);
      }
    }
    for (const auto& path : nested.included_files) {
      if (std::find(out.included_files.begin(), out.included_files.end(), path) ==
          out.included_files.end()) {
        out.included_files.push_back(path);
        record_files(path, out.obeyed, out);
      }
    }
  }
  return out;
}

GitAudit quarantine_new_git_entries(const GitSnapshot& before,
                                    const std::vector<std::string>& folders,
                                    const std::vector<std::string>& git_dirs,
                                    const AuditLimits& limits) {
  const GitSnapshot after =
      scan(folders, git_dirs, before.hook_folders, before.included_files, limits);
  // The worktrees the user added outside during the run are not the command's: what lies in
  // their entries is left alone.
  const std::set<std::string> users = users_worktrees(before, after, folders, git_dirs);
  const auto judged = [&users](const std::string& path) {
    return std::none_of(users.begin(), users.end(), [&path](const std::string& entry) {
      return path == entry || path.starts_with(entry + "/");
    });
  };
  GitAudit audit;
  // Gitfiles first: one the command re-pointed is put back, not merely moved.
  for (const auto& [path, original] : before.gitfiles) {
    const auto now = after.gitfiles.find(path);
    if (after.dot_gits.contains(path) && (now == after.gitfiles.end() || now->second != original)) {
      restore_file(path, original, "changed the gitfile", audit);
    }
  }
  for (const auto& path : after.dot_gits) {
    if (!before.dot_gits.contains(path)) {
      quarantine(path, "created a .git", audit);
    }
  }
  for (const auto& path : after.git_entries) {
    if (!before.git_entries.contains(path) && judged(path) &&
        (!top_of(path, git_dirs) || !git_makes(fs::path(path).filename().string()))) {
      quarantine(path, "created an entry in the git folder", audit);
    }
  }
  // In every git folder, and in the hooks folders and included files the configuration names:
  // what git obeys, changed (put back, the command's version kept aside) or new (moved aside);
  // a rebase or sequencer state begun by the command, moved aside whole.
  std::set<std::string> new_states;
  for (const auto& [path, content] : after.obeyed) {
    const auto old = before.obeyed.find(path);
    if (!judged(path)) {
      continue;
    }
    if (old != before.obeyed.end()) {
      if (old->second != content) {
        restore_file(path, old->second, "changed", audit);
      }
    } else if (const std::string state = new_state_folder(path, before.obeyed); !state.empty()) {
      new_states.insert(state);
    } else {
      quarantine(path, "added to what git obeys", audit);
    }
  }
  for (const auto& state : new_states) {
    quarantine(state, "left a rebase or cherry-pick in progress (its todo list runs `exec` lines)",
               audit);
  }
  for (const auto& [path, target] : after.links) {
    const auto old = before.links.find(path);
    if ((old == before.links.end() || old->second != target) && judged(path)) {
      quarantine(path, "left a symbolic link in the git folder (to " + target + ")", audit);
    }
  }
  for (const auto& folder : after.repositories) {
    if (before.repositories.contains(folder) || !judged(folder)) {
      continue;
    }
    const bool inside_git_dir =
        std::any_of(git_dirs.begin(), git_dirs.end(),
                    [&folder](const std::string& dir) { return folder.starts_with(dir + "/"); });
    if (inside_git_dir) {
      quarantine(folder, "hid a git folder in the git folder", audit);
      continue;
    }
    for (const char* name : {"/HEAD", "/config"}) {
      quarantine(folder + name, "made a folder into a git repository", audit);
    }
  }
  report_hidden(before, after, audit);
  report_auto_run(before, after, audit);
  judge_incomplete(before, after, git_dirs, audit);
  return audit;
}

}  // namespace sandgate::sandbox
