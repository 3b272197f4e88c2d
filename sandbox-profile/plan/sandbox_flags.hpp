// The command-line flags that `sandgate profile` and `sandgate run` share, and the gate's files
// as the confinement protects them. How they combine with the sandbox's settings into each
// platform's terms: macos/profile_options.hpp, linux/confinement_plan.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rules/expected.hpp"
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

}  // namespace sandgate::sandbox
