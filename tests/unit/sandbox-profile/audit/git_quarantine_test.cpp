// The audit after a run, against a scratch repository with small budgets: a scan cut short is
// never taken for a clean one, a git folder filled beyond its budget during the run is moved
// aside whole, and no path is followed through a link (no_follow.hpp).
#include "sandbox-profile/audit/git_quarantine.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>

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
  EXPECT_TRUE(fs::is_directory(work_ + "/.git.sandgate-quarantine-1"));
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
  EXPECT_TRUE(fs::exists(work_ + "/pre-commit.sandgate-quarantine-1"));
  EXPECT_EQ(audit.actions.size(), 1U);
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
