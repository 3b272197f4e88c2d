// The command-line flags that `sandgate profile` and `sandgate run` share, and how they combine
// with the sandbox's settings and the gate's files into the profile's options.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rules/expected.hpp"
#include "sandbox-profile/macos/profile.hpp"
#include "sandbox-profile/plan/resolved_path.hpp"
#include "sandbox-profile/plan/sandbox_options.hpp"

namespace sandgate::sandbox {

struct SandboxFlags {
  std::vector<std::uint16_t> allow_localhost_ports;  // --allow-localhost-port N (repeatable)
  std::vector<std::uint16_t> allow_inbound_ports;    // --allow-inbound-port N (repeatable)
  std::vector<std::string> allow_unix_sockets;       // --allow-unix-socket PATH (repeatable)
  bool strict_unix_sockets = false;                  // --strict-unix-sockets
  // --allow-unix-bind PATH (repeatable, Linux): the command may bind unix sockets below PATH
  // (which must be writable), a place the host sees; elsewhere only in the private folders.
  std::vector<std::string> allow_unix_binds;
  // --allow-write PATH (repeatable): writable for the command besides the working folder, the
  // home's caches and the temporary folders (protected paths stay read-only).
  std::vector<std::string> allow_writes;
  // --allow-read PATH (repeatable): a credential store (plan/credential_stores.hpp) that is PATH
  // or lies inside it stays readable; a PATH inside a hidden folder is shown in it.
  std::vector<std::string> allow_reads;
  // --allow-local-bind (macOS profile): serve on and connect to any localhost port.
  bool allow_local_bind = false;
  // --allow-trustd (macOS profile): let the command reach com.apple.trustd.agent, which checks
  // certificates for Security.framework and fetches the URLs a certificate names (OCSP, CRL,
  // issuers) itself, outside the gate (ProfileOptions::allow_trustd).
  bool allow_trustd = false;
};

// The files the gate reads and writes, made absolute and resolved: the command must not be able
// to change them (the gate reloads its lists live).
std::vector<std::string> gate_files(const GateView& gate);

// The profile's options for a gate on `proxy_port` (0: only on the gate's unix socket), from the
// sandbox's settings (the three toggles), the gate's files and socket, the flags, `home` and
// `ssh_auth_sock` (both as the environment gives them; resolved here), and what this process and
// the file system say: the working folder and its git repository, PATH, sandgate's executables,
// the resolved spellings of protected paths behind symbolic links, the passwd entry's home,
// $TMPDIR, the home's caches that exist, the inherited terminals. An
// --allow-unix-socket path that is a folder allows every socket below it.
ProfileOptions profile_options(const SandboxSettings& sandbox, const GateView& gate,
                               const SandboxFlags& flags, std::uint16_t proxy_port,
                               const std::string& home, const std::string& ssh_auth_sock);

// What `run` made for one run on the host's side (macOS under sandbox-exec) that its profile
// names.
struct RunPlaces {
  std::string relayed_terminal;  // the slave of the pty `run` relays (pty_relay.hpp); "": none
  std::string private_folder;    // the run's private folder (private_folder.hpp); "": none
};

// `options` for that run: a relayed terminal is the command's only terminal (the user's are not
// among `terminals` any more) and may be ioctl'd (terminals_relayed), and unix sockets may be
// bound in the private folder only.
void add_run_places(ProfileOptions& options, const RunPlaces& places);

}  // namespace sandgate::sandbox
