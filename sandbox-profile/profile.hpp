// The macOS Seatbelt profile (SBPL) that `sandgate run` confines a command with and that
// `sandgate profile` prints: goose's rules (see shared/reference/goose-compat.md) with its
// weaknesses fixed:
//   - TCP on localhost only to the gate's port and to --allow-localhost-port ports (goose allowed
//     every localhost port: any local proxy or daemon was a way out); serving only on
//     --allow-inbound-port ports (which the command may then also connect to); any local port
//     only with --allow-local-bind;
//   - unix sockets deny-by-default: only SSH_AUTH_SOCK, the gate's own socket and those listed
//     with --allow-unix-socket (no mDNSResponder: name lookups are the gate's business);
//   - no help from programs outside the sandbox: Launch Services (`open`), Apple events,
//     launchd jobs, background URL sessions are denied, signals stay inside the sandbox;
//   - write protection for every path protected_paths() lists, spelled as given, resolved
//     through symbolic links and case-folded (APFS is case-insensitive), hard links of them
//     denied, and the folders above them kept from being created, renamed or removed;
//   - tunnelling tools denied by executable name wherever they are installed (goose: /usr/bin);
//   - every path escaped; a path that cannot be represented safely is an error.
//
// Pure: the same options always give the same text (the golden tests rely on it). Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rules/expected.hpp"
#include "sandbox-profile/protected_paths.hpp"

namespace sandgate::sandbox {

struct ProfileOptions {
  std::string home;              // absolute and normal, e.g. "/Users/ada"
  std::uint16_t proxy_port = 0;  // the gate, on localhost (1..65535)
  std::string gate_unix_socket;  // the gate's unix socket (listen unix:PATH); "" for none. A
                                 // profile needs a proxy_port, this socket, or both.
  std::vector<std::uint16_t> allow_localhost_ports;    // more localhost TCP destinations
  std::vector<std::uint16_t> allow_inbound_ports;      // localhost ports the command may serve on
  std::vector<std::string> allow_unix_sockets;         // absolute socket paths
  std::vector<std::string> allow_unix_socket_folders;  // sockets anywhere below these folders
  // --strict-unix-sockets. On macOS unix sockets are always an allow-list, so it changes
  // nothing here; kept so that both systems read the same flags.
  bool strict_unix_sockets = false;
  std::string ssh_auth_sock;      // the ssh agent's socket, allowed; empty: none
  bool allow_local_bind = false;  // --allow-local-bind: serve on and connect to any local port
  bool protect_files = true;      // GOOSE_SANDBOX_PROTECT_FILES
  bool block_raw_sockets = true;  // GOOSE_SANDBOX_BLOCK_RAW_SOCKETS
  bool block_tunneling = true;    // GOOSE_SANDBOX_BLOCK_TUNNELING
  std::vector<std::string> gate_files;  // the gate's blocklist, allowlist, config and log files
  // What the process and the file system say (see ProtectionInputs and with_process_inputs()):
  std::string working_directory;
  std::vector<std::string> git_dirs;
  std::vector<std::string> path_entries;
  std::vector<std::string> own_executables;
  // Resolved spellings of protected paths that go through symbolic links, from
  // resolved_spellings(): protected too, with the same flags.
  std::vector<ProtectedPath> resolved_spellings;
};

// The protection inputs the options describe (for protected_paths()).
ProtectionInputs protection_inputs(const ProfileOptions& options);

// The profile text, or an error naming the option or path that cannot be used and why.
Expected<std::string, std::string> generate_profile(const ProfileOptions& options);

// The path of sandbox-exec, which `run` requires on macOS.
inline constexpr const char* kSandboxExecPath = "/usr/bin/sandbox-exec";

// The words to put in front of the command to confine it: sandbox-exec with the profile given
// inline (`-p TEXT`). Never a file: a file in a shared temporary folder could be rewritten by
// a process left from an earlier run between writing it and sandbox-exec reading it.
Expected<std::vector<std::string>, std::string> sandbox_exec_argv(const ProfileOptions& options);

// A case-insensitive SBPL regex source for exactly `path` (tree: the path and everything
// below it): every ASCII letter as a [xX] class, other regex characters escaped, anchored.
// AppleMatch has no (?i) flag: a profile with one loads, and the rule matches nothing.
std::string case_folded_regex(const std::string& path, bool tree);

// The executables denied when block_tunneling is on, matched by name anywhere: as an SBPL
// regex, and as the names it matches (for documentation and tests).
inline constexpr const char* kTunnelingRegex = "/(nc|ncat|netcat|socat|telnet)$";

// Mach services denied although the rest of the profile allows every lookup: each one does
// work outside the sandbox on the command's behalf. Apple events (the dispatcher behind
// `osascript`, which can tell Terminal to run a command) and background URL sessions
// (nsurlsessiond downloads and uploads for the caller, bypassing the gate).
inline constexpr const char* kDeniedMachServices[] = {
    "com.apple.coreservices.appleevents",
    "com.apple.nsurlsessiond",
    "com.apple.nsurlsessiond.NSURLSessionProxyService",
};

}  // namespace sandgate::sandbox
