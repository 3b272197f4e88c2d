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
#include <set>
#include <string_view>
#include <utility>

#include "sandbox-profile/audit/added_worktrees.hpp"
#include "sandbox-profile/audit/git_index.hpp"
#include "sandbox-profile/audit/move_aside.hpp"
#include "sandbox-profile/audit/no_follow.hpp"
#include "sandbox-profile/plan/auto_run_files.hpp"
#include "sandbox-profile/plan/git_config_targets.hpp"
#include "sandbox-profile/process/run_support.hpp"

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
// its walk: an entry at a listed name whatever its type, or any file below a listed folder, with
// their content; and a link at a name tools look up (a listed one, or a folder on the way to one:
// `sub/.vscode -> ../assets`) with where it leads and what a tool finds there (AutoRunLink).
// Bounded in files, bytes and entries walked through links: beyond them, the folder is said not
// to be checked whole.
class AutoRunFinder {
 public:
  AutoRunFinder(const std::string& folder, GitSnapshot& out)
      : folder_(folder), skip_(folder == "/" ? 1 : folder.size() + 1), out_(out) {}

  // Records `entry` if tools look it up. For a folder: whether a walk that looks only for these
  // should enter it (a listed folder, one below it, or one on the way to a listed file).
  Step visit(const Entry& entry) {
    const std::string_view path = entry.path;
    const std::string_view relative = path.substr(skip_);
    const bool below_listed = listed_folders_.contains(path.substr(0, path.rfind('/')));
    if (entry.type == DT_DIR) {
      if (below_listed || is_auto_run_folder(relative)) {
        listed_folders_.insert(entry.path);
        return Step::descend;
      }
      return is_auto_run_name(relative) ? Step::descend : Step::skip;
    }
    if ((below_listed || is_auto_run_name(relative)) && stopped_.empty()) {
      if (entry.type == DT_LNK) {
        record_link(entry.path, relative);
      } else if (std::string content = content_of(entry.path); charge(entry.path, content)) {
        out_.auto_run[entry.path] = std::move(content);
      }
    }
    return Step::skip;
  }
  // Where the bounds were reached; "" if they were not.
  const std::string& stopped() const { return stopped_; }

 private:
  static constexpr std::size_t kAutoRunFiles = 4096;
  static constexpr std::size_t kAutoRunBytes = 64 << 20;
  static constexpr std::size_t kEntriesThroughLinks = 65536;

  // Counts one more file of `content`'s size; false (and stopped_ set) beyond the bounds.
  bool charge(const std::string& path, const std::string& content) {
    if (++files_ > kAutoRunFiles || (bytes_ += content.size()) > kAutoRunBytes) {
      stopped_ = path;
      return false;
    }
    return true;
  }

  // The link at `path` (`relative` below the scanned folder): where it leads, as a tool would go
  // (the kernel resolves `..` after the link's own folder), and, when that is in the scanned
  // folder and reached without another link, the files tools would read there as if they were
  // at the link's path.
  void record_link(const std::string& path, std::string_view relative) {
    AutoRunLink link;
    link.target = link_target(path).value_or("?");
    const std::string raw = (fs::path(path).parent_path() / link.target).string();
    link.reached = fs::path(raw).lexically_normal().string();
    if (link.reached.size() > 1 && link.reached.ends_with('/')) {
      link.reached.pop_back();
    }
    const bool inside =
        link.reached == folder_ || link.reached.starts_with(folder_ == "/" ? "/" : folder_ + "/");
    link.leads =
        inside ? look_through(raw, std::string(relative), link) : AutoRunLink::Leads::outside;
    out_.auto_run_links[path] = std::move(link);
  }

  // `raw` opened with no link on the way or at the end: then the kernel's `..` and the lexical
  // one agree, and link.reached is where a tool lands.
  AutoRunLink::Leads look_through(const std::string& raw, const std::string& relative,
                                  AutoRunLink& link) {
    const UniqueFd end = open_no_follow(raw, O_PATH);
    struct stat info {};
    if (!end) {
      return errno == ENOENT ? AutoRunLink::Leads::nowhere : AutoRunLink::Leads::through_link;
    }
    if (::fstat(end.get(), &info) != 0 || S_ISLNK(info.st_mode)) {
      return AutoRunLink::Leads::through_link;
    }
    if (!S_ISDIR(info.st_mode)) {
      if (std::string content = content_of(link.reached); charge(link.reached, content)) {
        link.holds[""] = std::move(content);
      }
      return AutoRunLink::Leads::inside;
    }
    const std::size_t skip = link.reached == "/" ? 1 : link.reached.size() + 1;
    const std::string stopped = walk(link.reached, link_budget_, [&](const Entry& entry) {
      const std::string below = entry.path.substr(skip);
      const std::string seen_as = relative + "/" + below;
      if (entry.type == DT_DIR) {
        return is_auto_run_name(seen_as) || is_auto_run_path(seen_as) ? Step::descend : Step::skip;
      }
      if (is_auto_run_path(seen_as) && stopped_.empty()) {
        if (std::string content = content_of(entry.path); charge(entry.path, content)) {
          link.holds[below] = std::move(content);
        }
      }
      return Step::skip;
    });
    if (!stopped.empty() && stopped_.empty()) {
      stopped_ = stopped;
    }
    return AutoRunLink::Leads::inside;
  }

  std::string folder_;
  std::size_t skip_;
  GitSnapshot& out_;
  std::set<std::string, std::less<>> listed_folders_;
  std::size_t files_ = 0;
  std::size_t bytes_ = 0;
  std::size_t link_budget_ = kEntriesThroughLinks;
  std::string stopped_;
};

// The names tools look up at the top of a scanned folder, again on a budget of their own: a
// padded folder does not hide them. Each first component of a listed path (".vscode" for
// ".vscode/tasks.json"), whatever it is, and below it what tools read.
void find_auto_run_at_top(const std::string& folder, GitSnapshot& out) {
  std::set<std::string> firsts;
  for (const auto& name : auto_run_names()) {
    firsts.insert(std::string(name.path.substr(0, name.path.find('/'))));
  }
  AutoRunFinder finder(folder, out);
  for (const auto& first : firsts) {
    const std::string path = join(folder, first);
    const auto info = stat_no_follow(path);
    if (!info) {
      continue;
    }
    const unsigned char type = S_ISDIR(info->st_mode)   ? DT_DIR
                               : S_ISLNK(info->st_mode) ? DT_LNK
                               : S_ISREG(info->st_mode) ? DT_REG
                                                        : DT_UNKNOWN;
    if (finder.visit(Entry{path, -1, first.c_str(), type}) != Step::descend) {
      continue;
    }
    std::size_t budget = kFilesPerFolder;
    const std::string stopped =
        walk(path, budget, [&finder](const Entry& entry) { return finder.visit(entry); });
    if (!stopped.empty()) {
      out.incomplete.emplace(path, stopped);
    }
  }
  if (!finder.stopped().empty()) {
    out.incomplete.emplace(folder, finder.stopped());
  }
}

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
    AutoRunFinder auto_run(folder, out);
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
    find_auto_run_at_top(folder, out);
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

// What was done instead of moving it, for the warning and for the exit summary's list.
struct FallbackWords {
  std::string said;
  std::string listed;
};

FallbackWords fallback_words(const MovedAside& moved) {
  switch (moved.fallback) {
    case Fallback::locked:
      return {"it was made unreadable (mode 0)", "made unreadable"};
    case Fallback::hard_link: {
      const std::string names = std::to_string(moved.names);
      return {"it is a hard link (its file has " + names +
                  " names, one of them perhaps a file of yours), so it was NOT made unreadable: "
                  "that would have taken the other names' file away too",
              "a hard link, its file has " + names + " names: NOT made unreadable"};
    }
    case Fallback::none:
    case Fallback::failed:
      break;
  }
  return {"it could not be made unreadable", "NOT made unreadable"};
}

// What could not be moved aside: said, listed for the exit summary, and made unreadable where
// that reaches nothing else (move_aside()) so that git fails there rather than obeys it.
void could_not_move(const std::string& path, const std::string& why, const MovedAside& moved,
                    GitAudit& audit) {
  const std::string reason = std::strerror(moved.error);
  const FallbackWords words = fallback_words(moved);
  say("WARNING: the command " + why + ": " + path + ", which git would obey, could not be " +
      "moved aside (" + reason + "); " + words.said + ". Do not run git, an editor or a shell in " +
      fs::path(path).parent_path().string() + " until you have removed it");
  audit.unmoved.push_back(path + " (" + reason + "; " + words.listed + ")");
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

// `path` is an entry at the top of one of `folders`.
bool top_of(const std::string& path, const std::vector<std::string>& folders) {
  const std::string parent = fs::path(path).parent_path().string();
  return std::find(folders.begin(), folders.end(), parent) != folders.end();
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

// For the summary: where a link at a name tools look up leads, and what they find there.
std::string where_it_leads(const AutoRunLink& link) {
  switch (link.leads) {
    case AutoRunLink::Leads::outside:
      return "leads out of the working folder: not read";
    case AutoRunLink::Leads::nowhere:
      return "leads nowhere yet";
    case AutoRunLink::Leads::through_link:
      return "leads through another link: not followed";
    case AutoRunLink::Leads::inside:
      break;
  }
  if (link.holds.contains("")) {
    return "leads to " + link.reached;
  }
  if (link.holds.empty()) {
    return "leads to " + link.reached + ", which holds none of the files tools read";
  }
  constexpr std::size_t kNamed = 4;
  std::string names;
  std::size_t named = 0;
  for (const auto& [below, content] : link.holds) {
    if (named++ == kNamed) {
      names += " and " + std::to_string(link.holds.size() - kNamed) + " more";
      break;
    }
    names += (names.empty() ? "" : ", ") + below;
  }
  return "leads to " + link.reached + ", which holds " + names;
}

// The links at names tools look up, new or changed (pointed elsewhere, or what they lead to
// changed) or removed. One made or pointed elsewhere at the top of a working folder, where the
// tools look first and follow it, is said at once and listed first.
void report_auto_run_links(const GitSnapshot& before, const GitSnapshot& after,
                           const std::vector<std::string>& folders, std::vector<std::string>& top,
                           std::vector<std::string>& lines) {
  for (const auto& [path, link] : after.auto_run_links) {
    const auto old = before.auto_run_links.find(path);
    const bool made = old == before.auto_run_links.end();
    if (!made && old->second == link) {
      continue;
    }
    const std::string where = where_it_leads(link);
    const std::string what = made ? "new link" : "changed link";
    if ((made || old->second.target != link.target) && top_of(path, folders)) {
      say("WARNING: the command made " + path + " a symbolic link to " + link.target + " (" +
          where +
          "): editors, shells and agents that look there follow it. Remove it before you "
          "open or enter " +
          fs::path(path).parent_path().string() + " with them");
      top.push_back(path + " -> " + link.target + " (" + what +
                    " AT THE TOP, which the tools follow; " + where + ")");
      continue;
    }
    lines.push_back(path + " -> " + link.target + " (" + what + "; " + where + ")");
  }
  for (const auto& [path, link] : before.auto_run_links) {
    if (!after.auto_run_links.contains(path) && !after.auto_run.contains(path)) {
      lines.push_back(path + " -> " + link.target + " (removed link)");
    }
  }
}

// The files tools run or trust at any depth of the working folders, new, changed or removed, and
// the links at their names: named for the user to review, not moved (they may be the work
// asked for).
void report_auto_run(const GitSnapshot& before, const GitSnapshot& after,
                     const std::vector<std::string>& folders, GitAudit& audit) {
  std::vector<std::string> top;
  std::vector<std::string> lines;
  for (const auto& [path, content] : after.auto_run) {
    const auto old = before.auto_run.find(path);
    const char* what = old == before.auto_run.end() ? "new"
                       : old->second != content     ? "changed"
                                                    : nullptr;
    if (what != nullptr) {
      lines.push_back(path + " (" + what + ")");
    }
  }
  for (const auto& [path, content] : before.auto_run) {
    if (!after.auto_run.contains(path) && !after.auto_run_links.contains(path)) {
      lines.push_back(path + " (removed)");
    }
  }
  report_auto_run_links(before, after, folders, top, lines);
  std::sort(lines.begin(), lines.end());
  audit.auto_run = std::move(top);
  audit.auto_run.insert(audit.auto_run.end(), lines.begin(), lines.end());
  if (!audit.auto_run.empty()) {
    say("WARNING: the command wrote files (or links to them) that editors, shells, package "
        "managers and agents run or trust when you open or enter their folders (review them "
        "first): " +
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

namespace {

// Whether a path is the command's to judge: not in a worktree the user added outside during the
// run (what lies in its entries is left alone).
class Judged {
 public:
  explicit Judged(std::set<std::string> users) : users_(std::move(users)) {}
  bool operator()(const std::string& path) const {
    return std::none_of(users_.begin(), users_.end(), [&path](const std::string& entry) {
      return path == entry || path.starts_with(entry + "/");
    });
  }

 private:
  std::set<std::string> users_;
};

// The gitfiles the command re-pointed (put back, not merely moved), the .git it created and the
// entries it created in the git folders.
void judge_git_entries(const GitSnapshot& before, const GitSnapshot& after,
                       const std::vector<std::string>& git_dirs, const Judged& judged,
                       GitAudit& audit) {
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
}

// In every git folder, and in the hooks folders and included files the configuration names:
// what git obeys, changed (put back, the command's version kept aside) or new (moved aside); a
// rebase or sequencer state begun by the command, moved aside whole.
void judge_obeyed(const GitSnapshot& before, const GitSnapshot& after, const Judged& judged,
                  GitAudit& audit) {
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
}

// The symbolic links left in git folders, and the repositories made: a git folder hidden in a
// git folder, or a folder made into a repository.
void judge_links_and_repositories(const GitSnapshot& before, const GitSnapshot& after,
                                  const std::vector<std::string>& git_dirs, const Judged& judged,
                                  GitAudit& audit) {
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
}

}  // namespace

GitAudit quarantine_new_git_entries(const GitSnapshot& before,
                                    const std::vector<std::string>& folders,
                                    const std::vector<std::string>& git_dirs,
                                    const AuditLimits& limits) {
  const GitSnapshot after =
      scan(folders, git_dirs, before.hook_folders, before.included_files, limits);
  const Judged judged(users_worktrees(before, after, folders, git_dirs));
  GitAudit audit;
  // Gitfiles first: one the command re-pointed is put back, not merely moved.
  judge_git_entries(before, after, git_dirs, judged, audit);
  judge_obeyed(before, after, judged, audit);
  judge_links_and_repositories(before, after, git_dirs, judged, audit);
  report_hidden(before, after, audit);
  report_auto_run(before, after, folders, audit);
  judge_incomplete(before, after, git_dirs, audit);
  return audit;
}

}  // namespace sandgate::sandbox
