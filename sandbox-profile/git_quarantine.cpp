// New `.git` entries moved aside after a run. See git_quarantine.hpp.
#include "sandbox-profile/git_quarantine.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <filesystem>

#include "sandbox-profile/run_support.hpp"

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

}  // namespace

GitSnapshot snapshot_git(const std::vector<std::string>& folders,
                         const std::vector<std::string>& git_dirs) {
  constexpr std::size_t kLimit = 1000000;
  GitSnapshot out;
  std::size_t seen = 0;
  for (const auto& folder : folders) {
    std::error_code ec;
    if (exists(folder + "/.git")) {
      out.dot_gits.push_back(folder + "/.git");
    }
    fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (++seen > kLimit) {
        out.complete = false;
        break;
      }
      if (it->path().filename() == ".git") {
        out.dot_gits.push_back(it->path().string());
        it.disable_recursion_pending();
      } else if (it->is_symlink(ec)) {
        it.disable_recursion_pending();
      }
    }
  }
  for (const auto& dir : git_dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      out.git_entries.push_back(it->path().string());
    }
    for (const char* group : {"/modules", "/worktrees"}) {
      for (fs::directory_iterator it(dir + group, ec); !ec && it != fs::directory_iterator();
           it.increment(ec)) {
        out.git_entries.push_back(it->path().string());
      }
      ec.clear();
    }
  }
  std::sort(out.dot_gits.begin(), out.dot_gits.end());
  std::sort(out.git_entries.begin(), out.git_entries.end());
  return out;
}

std::vector<std::string> quarantine_new_git_entries(const GitSnapshot& before,
                                                    const std::vector<std::string>& folders,
                                                    const std::vector<std::string>& git_dirs) {
  const GitSnapshot after = snapshot_git(folders, git_dirs);
  std::vector<std::string> suspicious;
  for (const auto& path : after.dot_gits) {
    if (!std::binary_search(before.dot_gits.begin(), before.dot_gits.end(), path)) {
      suspicious.push_back(path);
    }
  }
  for (const auto& path : after.git_entries) {
    const fs::path entry(path);
    const bool top =
        std::find(git_dirs.begin(), git_dirs.end(), entry.parent_path().string()) != git_dirs.end();
    if (!std::binary_search(before.git_entries.begin(), before.git_entries.end(), path) &&
        (!top || !git_makes(entry.filename().string()))) {
      suspicious.push_back(path);
    }
  }
  std::vector<std::string> moved;
  for (const auto& path : suspicious) {
    for (int n = 1; n < 1000; ++n) {
      const std::string target = path + ".sandgate-quarantine-" + std::to_string(n);
      if (exists(target)) {
        continue;
      }
      if (::rename(path.c_str(), target.c_str()) == 0) {
        say("WARNING: the command created " + path +
            ", which git would obey the next time it runs there (hooks, core.fsmonitor): moved "
            "to " +
            target + ". Look at it before you use it.");
        moved.push_back(target);
      } else {
        say("WARNING: the command created " + path +
            ", which git would obey, and it could not "
            "be moved aside (" +
            std::strerror(errno) + "): remove it before running git there");
      }
      break;
    }
  }
  return moved;
}

}  // namespace sandgate::sandbox
