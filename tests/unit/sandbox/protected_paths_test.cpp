// The protected paths shared by the Seatbelt profile and Landlock.
#include "sandbox-profile/protected_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace sandgate::sandbox {
namespace {

bool has(const std::vector<ProtectedPath>& paths, const std::string& path, bool tree) {
  return std::any_of(paths.begin(), paths.end(),
                     [&](const ProtectedPath& p) { return p.path == path && p.tree == tree; });
}

TEST(ProtectedPaths, CoverEveryShellSshGnupgAndTheConfigFolders) {
  const auto paths = protected_paths(
      {.home = "/home/ada", .protect_files = true, .platform = Platform::linux, .gate_files = {}});
  for (const char* file : {".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
                           ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout"}) {
    EXPECT_TRUE(has(paths, std::string("/home/ada/") + file, false)) << file;
  }
  for (const char* folder : {".config/fish", ".ssh", ".gnupg", ".config/goose", ".config/sandgate",
                             ".config/autostart", ".config/systemd"}) {
    EXPECT_TRUE(has(paths, std::string("/home/ada/") + folder, true)) << folder;
  }
  EXPECT_FALSE(has(paths, "/home/ada/Library/LaunchAgents", true));

  const auto mac = protected_paths(
      {.home = "/Users/ada", .protect_files = true, .platform = Platform::macos, .gate_files = {}});
  EXPECT_TRUE(has(mac, "/Users/ada/Library/LaunchAgents", true));
  EXPECT_FALSE(has(mac, "/Users/ada/.config/systemd", true));
}

TEST(ProtectedPaths, WithoutProtectFilesOnlyTheGatesConfigurationRemains) {
  const auto paths = protected_paths(
      {.home = "/home/ada",
       .protect_files = false,
       .platform = Platform::linux,
       .gate_files = {"/etc/sandgate.toml", "", "/home/ada/.config/goose/sandbox/b.txt"}});
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_TRUE(has(paths, "/home/ada/.config/sandgate", true));
  EXPECT_TRUE(has(paths, "/home/ada/.config/goose/sandbox", true));
  EXPECT_TRUE(has(paths, "/etc/sandgate.toml", false));  // b.txt: covered by the folder
  for (const auto& p : paths) {
    EXPECT_TRUE(p.always) << p.path;
  }
}

TEST(ProtectedPaths, RootHomeHasNoDoubleSlash) {
  const auto paths = protected_paths(
      {.home = "/", .protect_files = true, .platform = Platform::linux, .gate_files = {}});
  EXPECT_TRUE(has(paths, "/.ssh", true));
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

}  // namespace
}  // namespace sandgate::sandbox
