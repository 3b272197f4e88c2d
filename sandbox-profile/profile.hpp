// The macOS Seatbelt profile (SBPL) that `sandgate run` confines a command with and that
// `sandgate profile` prints: goose's rules (see shared/reference/goose-compat.md) with its
// weaknesses fixed:
//   - TCP on localhost only to the gate's port and to --allow-localhost-port ports (goose allowed
//     every localhost port: any local proxy or daemon was a way out); inbound only on
//     --allow-inbound-port ports;
//   - the container and VM daemons' unix sockets (docker, podman, containerd, colima, lima)
//     denied; a strict mode that allows only the system's own sockets and listed ones;
//   - write protection for every shell's start-up files, ~/.ssh, ~/.gnupg, LaunchAgents and the
//     gate's and goose's configuration, including renames of the folders above them;
//   - tunnelling tools denied by executable name wherever they are installed (goose: /usr/bin);
//   - every path escaped; a path that cannot be represented safely is an error.
//
// Pure: the same options always give the same text (the golden tests rely on it). Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rules/expected.hpp"

namespace sandgate::sandbox {

struct ProfileOptions {
  std::string home;                                  // absolute and normal, e.g. "/Users/ada"
  std::uint16_t proxy_port = 0;                      // the gate, on localhost; required (1..65535)
  std::vector<std::uint16_t> allow_localhost_ports;  // more localhost TCP destinations
  std::vector<std::uint16_t> allow_inbound_ports;    // localhost ports the command may serve on
  std::vector<std::string> allow_unix_sockets;       // absolute socket paths
  bool strict_unix_sockets = false;     // only the system's sockets and allow_unix_sockets
  std::string ssh_auth_sock;            // allowed in strict mode too; empty: none
  bool protect_files = true;            // GOOSE_SANDBOX_PROTECT_FILES
  bool block_raw_sockets = true;        // GOOSE_SANDBOX_BLOCK_RAW_SOCKETS
  bool block_tunneling = true;          // GOOSE_SANDBOX_BLOCK_TUNNELING
  std::vector<std::string> gate_files;  // the gate's blocklist, allowlist, config and log files
};

// The profile text, or an error naming the option or path that cannot be used and why.
Expected<std::string, std::string> generate_profile(const ProfileOptions& options);

// The executables denied when block_tunneling is on, matched by name anywhere: as an SBPL
// regex, and as the names it matches (for documentation and tests).
inline constexpr const char* kTunnelingRegex = "/(nc|ncat|netcat|socat|telnet)$";
// Unix socket file names of container daemons, matched anywhere.
inline constexpr const char* kContainerSocketRegex =
    "/(docker|podman|containerd|crio|cri-dockerd|buildkitd)[^/]*\\.sock$";

}  // namespace sandgate::sandbox
