// The mount view's pure part: finding the second mounts of a protected path in the text of
// /proc/self/mountinfo (issue 20, item 9). The mounting itself is exercised end to end by
// tests/e2e/run_test.cpp.
#include "sandbox-profile/linux/private_view.hpp"

#include <gtest/gtest.h>

namespace sandgate::sandbox {
namespace {

constexpr const char* kMountinfo =
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
    "30 27 8:2 / /home rw,relatime - ext4 /dev/sda2 rw\n"
    // The home of ada mounted a second time under her project, and /home again at /mnt/h.
    "41 30 8:2 /ada /home/ada/projects/alias rw,relatime - ext4 /dev/sda2 rw\n"
    "42 27 8:2 / /mnt/h rw,relatime - ext4 /dev/sda2 rw\n"
    // Another file system's folder of the same name: not an alias.
    "43 27 8:3 /ada /srv/ada rw,relatime - ext4 /dev/sda3 rw\n"
    // A path with a space, escaped as mountinfo does.
    "44 27 8:2 /ada/.ssh /opt/my\\040keys rw,relatime - ext4 /dev/sda2 rw\n";

TEST(MountAliases, FindsEveryOtherMountOfTheSameFolder) {
  EXPECT_EQ(mount_aliases(kMountinfo, "/home/ada/.bashrc"),
            (std::vector<std::string>{"/home/ada/projects/alias/.bashrc", "/mnt/h/ada/.bashrc"}));
  EXPECT_EQ(mount_aliases(kMountinfo, "/home/ada/.ssh"),
            (std::vector<std::string>{"/home/ada/projects/alias/.ssh", "/mnt/h/ada/.ssh",
                                      "/opt/my keys"}));
  EXPECT_EQ(mount_aliases(kMountinfo, "/home/ada/.ssh/config"),
            (std::vector<std::string>{"/home/ada/projects/alias/.ssh/config",
                                      "/mnt/h/ada/.ssh/config", "/opt/my keys/config"}));
}

TEST(MountAliases, NoneForAPathMountedOnce) {
  EXPECT_TRUE(mount_aliases(kMountinfo, "/etc/passwd").empty());
  EXPECT_TRUE(mount_aliases(kMountinfo, "/home/bob/.bashrc").size() == 1);  // /mnt/h/bob
  EXPECT_TRUE(mount_aliases("", "/home/ada/.bashrc").empty());
}

// A path reached through the alias itself maps back to the original and the other alias.
TEST(MountAliases, WorksFromEitherSide) {
  EXPECT_EQ(mount_aliases(kMountinfo, "/home/ada/projects/alias/.bashrc"),
            (std::vector<std::string>{"/home/ada/.bashrc", "/mnt/h/ada/.bashrc"}));
}

}  // namespace
}  // namespace sandgate::sandbox
