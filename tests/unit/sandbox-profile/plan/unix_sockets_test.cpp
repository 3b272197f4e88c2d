// Which unix sockets `run` hides on Linux.
#include "sandbox-profile/plan/unix_sockets.hpp"

#include <gtest/gtest.h>

namespace sandgate::sandbox {
namespace {

constexpr const char* kProcNetUnix =
    "Num       RefCount Protocol Flags    Type St Inode Path\n"
    "0000000055d6471a: 00000002 00000000 00010000 0001 01 20147 /run/docker.sock\n"
    "000000009700a64f: 00000003 00000000 00000000 0001 03  1586 /run/systemd/journal/stdout\n"
    "00000000dcce56ed: 00000002 00000000 00010000 0001 01 7773553 /tmp/with space.sock\n"
    "00000000dcce56ee: 00000002 00000000 00010000 0001 01 7773554 @/tmp/.X11-unix/X0\n"
    "00000000dcce56ef: 00000002 00000000 00010000 0005 01 7773555 /dev/log\n"
    "00000000dcce56f0: 00000003 00000000 00000000 0001 03  1587\n"
    "00000000dcce56f1: 00000002 00000000 00000000 0002 01 7773556 /var/lib/x/dgram.sock\n";

// Every socket with a path, listening or not, stream or datagram (finding 5: a daemon's datagram
// socket was reachable); abstract and unnamed ones are not files.
TEST(UnixSockets, ListsEveryPathSocketWhateverItsTypeOrState) {
  EXPECT_EQ(
      bound_unix_sockets(kProcNetUnix),
      (std::vector<std::string>{"/run/docker.sock", "/run/systemd/journal/stdout",
                                "/tmp/with space.sock", "/dev/log", "/var/lib/x/dgram.sock"}));
  EXPECT_TRUE(bound_unix_sockets("").empty());
  EXPECT_TRUE(bound_unix_sockets("header only\n").empty());
}

// Deny by default: every socket outside the private folders is hidden but the listed ones and
// the SSH agent; nscd, systemd-resolved and /dev/log are not kept (issue 20, item 7).
TEST(UnixSockets, EverySocketIsHiddenButTheListedOnesAndTheAgent) {
  MaskInputs inputs;
  inputs.sockets = {"/var/lib/docker.sock",
                    "/home/a/.ssh/cm-host",
                    "/dev/log",
                    "/run/systemd/resolve/io.systemd.Resolve",
                    "/home/a/agent.1",
                    "/srv/podman/podman.sock",
                    "/var/lib/docker.sock",
                    "/run/user/1000/bus",
                    "/var/run/nscd/socket",
                    "/tmp/.X11-unix/X0"};
  inputs.ssh_auth_sock = "/home/a/agent.1";
  inputs.private_folders = {"/run", "/tmp"};
  EXPECT_EQ(sockets_to_hide(inputs),
            (std::vector<std::string>{"/dev/log", "/home/a/.ssh/cm-host", "/srv/podman/podman.sock",
                                      "/var/lib/docker.sock", "/var/run/nscd/socket"}));

  inputs.allowed = {"/srv/podman/podman.sock"};
  inputs.private_folders.push_back("/var/run");
  EXPECT_EQ(sockets_to_hide(inputs),
            (std::vector<std::string>{"/dev/log", "/home/a/.ssh/cm-host", "/var/lib/docker.sock"}));
  EXPECT_FALSE(is_system_socket("/run/nscd/socket", ""));
  EXPECT_FALSE(is_system_socket("/run/systemd/resolve/io.systemd.Resolve", ""));
  EXPECT_TRUE(is_system_socket("/home/a/agent.1", "/home/a/agent.1"));
}

TEST(UnixSockets, PrivateFoldersCoverRunTmpAndTheRuntimeFolder) {
  const std::vector<std::string> base = {"/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm"};
  EXPECT_EQ(private_socket_folders(""), base);
  EXPECT_EQ(private_socket_folders("/run/user/1000"), base);  // inside /run already
  auto custom = base;
  custom.push_back("/home/a/.run");
  EXPECT_EQ(private_socket_folders("/home/a/.run"), custom);
  EXPECT_EQ(private_socket_folders("relative"), base);
  EXPECT_EQ(
      private_socket_folders("/runner"),
      (std::vector<std::string>{"/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm", "/runner"}));
}

TEST(UnixSockets, WellKnownPathsIncludeTheUsersRuntimeFolder) {
  const auto paths = well_known_container_sockets("/home/a", 1000);
  EXPECT_NE(std::find(paths.begin(), paths.end(), "/run/user/1000/docker.sock"), paths.end());
  EXPECT_NE(std::find(paths.begin(), paths.end(), "/home/a/.docker/run/docker.sock"), paths.end());
}

}  // namespace
}  // namespace sandgate::sandbox
