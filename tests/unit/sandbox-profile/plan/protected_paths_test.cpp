// The protected paths shared by the Seatbelt profile and Landlock: what each platform protects,
// the repository being worked on, PATH folders, sandgate's executables, and the helpers that
// read the file system (git folders, link resolution) against a scratch tree.
#include "sandbox-profile/plan/protected_paths.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace sandgate::sandbox {
namespace {

namespace fs = std::filesystem;

bool has(const std::vector<ProtectedPath>& paths, const std::string& path, bool tree) {
  return std::any_of(paths.begin(), paths.end(),
                     [&](const ProtectedPath& p) { return p.path == path && p.tree == tree; });
}

bool mentions(const std::vector<ProtectedPath>& paths, const std::string& path) {
  return std::any_of(paths.begin(), paths.end(),
                     [&](const ProtectedPath& p) { return p.path == path; });
}

ProtectionInputs linux_inputs() {
  return {.home = "/home/ada", .protect_files = true, .platform = Platform::linux};
}

TEST(ProtectedPaths, CoverEveryShellFileAndTheConfigFolders) {
  const auto paths = protected_paths(linux_inputs());
  for (const char* file : {".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
                           ".bash_aliases", ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout",
                           ".gitconfig", ".pam_environment", ".xprofile"}) {
    EXPECT_TRUE(has(paths, std::string("/home/ada/") + file, false)) << file;
  }
  for (const char* folder :
       {".config/fish", ".bashrc.d", ".config/git", ".local/bin", ".config/goose",
        ".config/sandgate", ".config/autostart", ".config/systemd", ".config/environment.d",
        ".local/share/systemd/user", ".local/share/dbus-1/services", ".ssh/config.d",
        ".gnupg/private-keys-v1.d"}) {
    EXPECT_TRUE(has(paths, std::string("/home/ada/") + folder, true)) << folder;
  }
  EXPECT_FALSE(mentions(paths, "/home/ada/Library/LaunchAgents"));
  EXPECT_FALSE(mentions(paths, "/private/var/at"));

  const auto mac =
      protected_paths({.home = "/Users/ada", .protect_files = true, .platform = Platform::macos});
  EXPECT_TRUE(has(mac, "/Users/ada/Library/LaunchAgents", true));
  EXPECT_TRUE(has(mac, "/Users/ada/.gitconfig", false));
  EXPECT_TRUE(has(mac, "/Users/ada/.local/bin", true));
  // crontab and at write the spool as root: protected for a gate run as root.
  for (const char* folder : {"/private/var/at", "/usr/lib/cron", "/Library/LaunchDaemons",
                             "/Library/LaunchAgents", "/private/etc"}) {
    EXPECT_TRUE(has(mac, folder, true)) << folder;
  }
  EXPECT_FALSE(mentions(mac, "/Users/ada/.config/systemd"));
  EXPECT_FALSE(mentions(mac, "/Users/ada/.local/share/dbus-1/services"));
}

// ~/.ssh and ~/.gnupg: what runs code or grants access is protected; what ssh and gpg write in
// normal use (known_hosts, lock files, random_seed, agent sockets) is not.
TEST(ProtectedPaths, SshAndGnupgAreProtectedFileByFile) {
  const auto paths = protected_paths(linux_inputs());
  for (const char* file : {"config", "authorized_keys", "authorized_keys2", "rc", "environment",
                           "id_ed25519", "id_rsa", "id_ecdsa_sk"}) {
    EXPECT_TRUE(has(paths, std::string("/home/ada/.ssh/") + file, false)) << file;
  }
  for (const char* file : {"gpg.conf", "gpg-agent.conf", "scdaemon.conf", "dirmngr.conf",
                           "pubring.kbx", "trustdb.gpg", "sshcontrol"}) {
    EXPECT_TRUE(has(paths, std::string("/home/ada/.gnupg/") + file, false)) << file;
  }
  EXPECT_FALSE(mentions(paths, "/home/ada/.ssh"));
  EXPECT_FALSE(mentions(paths, "/home/ada/.gnupg"));
  EXPECT_FALSE(mentions(paths, "/home/ada/.ssh/known_hosts"));
  EXPECT_FALSE(mentions(paths, "/home/ada/.gnupg/random_seed"));
  EXPECT_FALSE(mentions(paths, "/home/ada/.gnupg/pubring.kbx.lock"));
}

TEST(ProtectedPaths, WithoutProtectFilesOnlyTheGatesConfigurationRemains) {
  const auto paths = protected_paths(
      {.home = "/home/ada",
       .protect_files = false,
       .platform = Platform::linux,
       .gate_files = {"/etc/sandgate.toml", "", "/home/ada/.config/goose/sandbox/b.txt"},
       .working_directory = "/home/ada/src/app",
       .git_dirs = {"/home/ada/src/app/.git"},
       .path_entries = {"/home/ada/.cargo/bin"},
       .own_executables = {"/opt/sandgate/bin/sandgate", "/opt/sandgate/bin/sandgate-connect"}});
  ASSERT_EQ(paths.size(), 5u);
  EXPECT_TRUE(has(paths, "/home/ada/.config/sandgate", true));
  EXPECT_TRUE(has(paths, "/home/ada/.config/goose/sandbox", true));
  EXPECT_TRUE(has(paths, "/etc/sandgate.toml", false));  // b.txt: covered by the folder
  EXPECT_TRUE(has(paths, "/opt/sandgate/bin/sandgate", false));
  EXPECT_TRUE(has(paths, "/opt/sandgate/bin/sandgate-connect", false));
  for (const auto& p : paths) {
    EXPECT_TRUE(p.always) << p.path;
  }
}

TEST(ProtectedPaths, TheRepositoryBeingWorkedOnKeepsItsHooksAndConfig) {
  ProtectionInputs inputs = linux_inputs();
  inputs.working_directory = "/home/ada/src/app/lib";
  inputs.git_dirs = {"/home/ada/src/app/.git/worktrees/wt", "/home/ada/src/app/.git"};
  const auto paths = protected_paths(inputs);
  for (const char* dir : {"/home/ada/src/app/.git/worktrees/wt", "/home/ada/src/app/.git"}) {
    EXPECT_TRUE(has(paths, std::string(dir) + "/hooks", true)) << dir;
    EXPECT_TRUE(has(paths, std::string(dir) + "/config", false)) << dir;
    EXPECT_TRUE(has(paths, std::string(dir) + "/config.worktree", false)) << dir;
    EXPECT_FALSE(mentions(paths, dir)) << "the rest of .git (objects, refs, index) stays writable";
  }
}

TEST(ProtectedPaths, PathFoldersAreProtectedExceptTheWorkAndFoldersAboveTheHome) {
  ProtectionInputs inputs = linux_inputs();
  inputs.working_directory = "/home/ada/src/app";
  inputs.path_entries = {"/home/ada/.cargo/bin",
                         "/home/ada/go/bin",
                         "/home/ada/src/app/node_modules/.bin",  // the work: writable
                         "/home/ada/src",                        // holds the work: left out
                         "/home",                                // holds the home: left out
                         "/",
                         "/usr/local/bin",
                         "/opt/homebrew/bin/",
                         "/home/ada/.local/bin"};  // already protected once
  const auto paths = protected_paths(inputs);
  EXPECT_TRUE(has(paths, "/home/ada/.cargo/bin", true));
  EXPECT_TRUE(has(paths, "/home/ada/go/bin", true));
  EXPECT_TRUE(has(paths, "/usr/local/bin", true));
  EXPECT_TRUE(has(paths, "/opt/homebrew/bin", true));
  EXPECT_FALSE(mentions(paths, "/home/ada/src/app/node_modules/.bin"));
  EXPECT_FALSE(mentions(paths, "/home/ada/src"));
  EXPECT_FALSE(mentions(paths, "/home"));
  EXPECT_FALSE(mentions(paths, "/"));
  EXPECT_EQ(std::count_if(paths.begin(), paths.end(),
                          [](const ProtectedPath& p) { return p.path == "/home/ada/.local/bin"; }),
            1);

  // Working in the home itself: its PATH folders are protected, not treated as the work.
  inputs.working_directory = "/home/ada";
  inputs.path_entries = {"/home/ada/bin"};
  EXPECT_TRUE(has(protected_paths(inputs), "/home/ada/bin", true));
}

TEST(ProtectedPaths, RootHomeHasNoDoubleSlash) {
  const auto paths = protected_paths(
      {.home = "/", .protect_files = true, .platform = Platform::linux, .gate_files = {}});
  EXPECT_TRUE(has(paths, "/.ssh/config", false));
  for (const auto& p : paths) {
    EXPECT_EQ(p.path.find("//"), std::string::npos) << p.path;
  }
}

TEST(IsWithin, ComparesWholeComponents) {
  EXPECT_TRUE(is_within("/a/b", "/a/b"));
  EXPECT_TRUE(is_within("/a/b/c", "/a/b"));
  EXPECT_FALSE(is_within("/a/bc", "/a/b"));
  EXPECT_FALSE(is_within("/a", "/a/b"));
  EXPECT_TRUE(is_within("/anything", "/"));
}

TEST(SplitPathList, KeepsAbsoluteFoldersOnceInOrder) {
  EXPECT_EQ(split_path_list("/usr/bin::.:bin:/opt/x/:/usr/bin:/b"),
            (std::vector<std::string>{"/usr/bin", "/opt/x", "/b"}));
  EXPECT_TRUE(split_path_list("").empty());
}

// --- helpers that read the file system ------------------------------------------------------

class ScratchTree : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "sandgate-pp-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    root_ = resolve_links(templ);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << text;
  }
  std::string root_;
};

TEST_F(ScratchTree, EnclosingGitDirsWalksUpToTheRepository) {
  fs::create_directories(root_ + "/repo/.git/hooks");
  fs::create_directories(root_ + "/repo/src/deep");
  EXPECT_EQ(enclosing_git_dirs(root_ + "/repo/src/deep"),
            (std::vector<std::string>{root_ + "/repo/.git"}));
  EXPECT_EQ(enclosing_git_dirs(root_ + "/repo"), (std::vector<std::string>{root_ + "/repo/.git"}));
  fs::create_directories(root_ + "/plain");
  // Outside any repository (assuming the temporary folder is in none).
  const auto outside = enclosing_git_dirs(root_ + "/plain");
  for (const auto& dir : outside) {
    EXPECT_FALSE(is_within(dir, root_)) << dir;
  }
}

TEST_F(ScratchTree, EnclosingGitDirsFollowsAWorktreeToItsCommonFolder) {
  fs::create_directories(root_ + "/main/.git/worktrees/wt");
  write(root_ + "/main/.git/worktrees/wt/commondir", "../..\n");
  write(root_ + "/wt/.git", "gitdir: " + root_ + "/main/.git/worktrees/wt\n");
  fs::create_directories(root_ + "/wt/sub");
  EXPECT_EQ(enclosing_git_dirs(root_ + "/wt/sub"),
            (std::vector<std::string>{root_ + "/main/.git/worktrees/wt", root_ + "/main/.git"}));

  // A submodule: a relative gitdir, no commondir.
  fs::create_directories(root_ + "/main/.git/modules/lib");
  write(root_ + "/main/lib/.git", "gitdir: ../.git/modules/lib\n");
  EXPECT_EQ(enclosing_git_dirs(root_ + "/main/lib"),
            (std::vector<std::string>{root_ + "/main/.git/modules/lib"}));
}

TEST_F(ScratchTree, ResolveLinksFollowsFolderFileAndDanglingLinks) {
  fs::create_directories(root_ + "/dotfiles/config");
  write(root_ + "/dotfiles/zshrc", "x");
  fs::create_directories(root_ + "/home");
  fs::create_symlink(root_ + "/dotfiles/zshrc", root_ + "/home/.zshrc");
  fs::create_symlink("../dotfiles/config", root_ + "/home/.config");
  fs::create_symlink(root_ + "/nowhere/bashrc", root_ + "/home/.bashrc");  // dangling
  EXPECT_EQ(resolve_links(root_ + "/home/.zshrc"), root_ + "/dotfiles/zshrc");
  EXPECT_EQ(resolve_links(root_ + "/home/.config/git/config"),
            root_ + "/dotfiles/config/git/config");
  EXPECT_EQ(resolve_links(root_ + "/home/.bashrc"), root_ + "/nowhere/bashrc");
  EXPECT_EQ(resolve_links(root_ + "/home/missing/x"), root_ + "/home/missing/x");
  fs::create_symlink(root_ + "/home/loop", root_ + "/home/loop");
  EXPECT_EQ(resolve_links(root_ + "/home/loop/x"), root_ + "/home/loop/x");
  EXPECT_EQ(resolve_links("relative/x"), "relative/x");

  const auto spellings = resolved_spellings({{root_ + "/home/.zshrc", false, false},
                                             {root_ + "/home/.config/git", true, false},
                                             {root_ + "/home/plain", false, true}});
  ASSERT_EQ(spellings.size(), 2u);
  EXPECT_EQ(spellings[0].path, root_ + "/dotfiles/zshrc");
  EXPECT_FALSE(spellings[0].tree);
  EXPECT_EQ(spellings[1].path, root_ + "/dotfiles/config/git");
  EXPECT_TRUE(spellings[1].tree);
}

TEST(ProcessInputs, FillTheWorkingFolderPathAndOwnExecutables) {
  const auto inputs = with_process_inputs({.home = "/home/ada"});
  EXPECT_FALSE(inputs.working_directory.empty());
  ASSERT_EQ(inputs.own_executables.size(), 2u);
  EXPECT_TRUE(inputs.own_executables[1].ends_with("/sandgate-connect"));
  for (const auto& entry : inputs.path_entries) {
    EXPECT_EQ(entry.front(), '/');
  }
}

}  // namespace
}  // namespace sandgate::sandbox
