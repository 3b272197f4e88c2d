// The places a confined command must not write: the gate's own configuration (always), and with
// protect_files (GOOSE_SANDBOX_PROTECT_FILES, on by default) the places an agent could use to
// persist or to escalate: shell start-up files, ~/.ssh, ~/.gnupg, login agents, goose's config.
//
// One list serves both confinements: the Seatbelt profile (macOS) and Landlock (Linux), so the
// two cannot drift apart. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace sandgate::sandbox {

enum class Platform : unsigned char { macos, linux };

struct ProtectedPath {
  std::string path;   // absolute and normal
  bool tree = false;  // true: the folder and everything below it; false: this one path
  // True for the gate's own configuration, protected whatever protect_files says: it decides
  // where the sandbox may connect, and sandgate reloads it live.
  bool always = false;
};

struct ProtectionInputs {
  std::string home;  // absolute and normal
  bool protect_files = true;
  Platform platform = Platform::macos;
  // The files the running gate reads (blocklist, allowlist, config file, log file): protected
  // as single paths unless a protected folder already covers them. Empty entries are skipped.
  std::vector<std::string> gate_files;
};

// The protected paths, in a fixed order (the gate's configuration first), without duplicates and
// without paths that a protected folder earlier in the list already covers.
std::vector<ProtectedPath> protected_paths(const ProtectionInputs& inputs);

// True if `path` is `folder` or lies below it (component-wise: /a/bc is not below /a/b).
bool is_within(const std::string& path, const std::string& folder);

}  // namespace sandgate::sandbox
