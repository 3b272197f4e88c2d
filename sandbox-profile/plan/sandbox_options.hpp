// What the confinement is told, in its own terms: the sandbox's settings and what it must know
// about the gate. `sandgate` fills these from its settings (proxy/ includes sandbox-profile/,
// never the reverse), so the confinement code depends on nothing of the daemon's.
#pragma once

#include <string>
#include <vector>

namespace sandgate::sandbox {

// The sandbox's own settings (GOOSE_SANDBOX_*), held by the daemon's settings as `sandbox`.
struct SandboxSettings {
  bool protect_files = true;      // write-protect ~/.ssh, shell start-up files, config folders
  bool block_raw_sockets = true;  // deny raw IPv4/IPv6 sockets (macOS profile)
  bool block_tunneling = true;    // deny nc, ncat, netcat, socat, telnet (macOS profile)
  // `run` on Linux: every TCP connection and DNS query of the command goes to the gate
  // (capture_network.hpp), not only those of tools that honour the proxy variables.
  bool capture = true;
};

// The gate a command is confined behind.
// A masked credential as the command sees it (proxy/secrets/): `name` holds `sentinel`, and
// every inherited variable that holds the real `value` (its source, a copy under another
// name) holds the sentinel there instead.
struct MaskedVariable {
  std::string name;
  std::string value;
  std::string sentinel;
};

struct GateView {
  // The gate's files as configured (blocklist, allowlist, config file, log file; empty ones left
  // out): the command must not be able to change them, nor re-point a link on their way.
  std::vector<std::string> files;
  // The path of the gate's unix socket (listen unix:PATH); empty for a TCP gate.
  std::string unix_socket;
  // Folders the command must not read at all: the inspection CA's, which holds its key.
  std::vector<std::string> unreadable;
  // Files of the gate's own secrets (its token, admin token, parent-proxy credentials): hidden
  // like the credential stores.
  std::vector<std::string> secret_files;
  // The CA bundle (the system's roots and the inspection CA) the command's tools are pointed
  // at when the gate inspects; empty when it does not.
  std::string ca_bundle;
  // The same certificates as a PKCS12 trust store, for Java (JAVA_TOOL_OPTIONS); empty when none.
  std::string java_trust_store;
  // The masked credentials: the command's environment holds their sentinels, never their values.
  std::vector<MaskedVariable> masked_variables;
};

}  // namespace sandgate::sandbox
