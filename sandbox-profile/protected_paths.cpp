// The protected paths. See protected_paths.hpp.
#include "sandbox-profile/protected_paths.hpp"

#include <array>
#include <string_view>

namespace sandgate::sandbox {
namespace {

// Shell start-up files: each runs code the next time the user opens a shell, outside the
// sandbox. bash reads the first of .bash_profile, .bash_login and .profile for a login shell, so
// creating a missing one is as good as editing an existing one: all are protected. fish keeps
// its start-up code in a folder (config.fish, conf.d/, functions/).
constexpr std::array<std::string_view, 10> kShellFiles = {
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
    ".zshrc",  ".zshenv",       ".zprofile",   ".zlogin",      ".zlogout"};

void add(std::vector<ProtectedPath>& out, std::string path, bool tree, bool always) {
  for (const auto& existing : out) {
    if (existing.path == path || (existing.tree && is_within(path, existing.path))) {
      return;
    }
  }
  out.push_back({std::move(path), tree, always});
}

}  // namespace

bool is_within(const std::string& path, const std::string& folder) {
  if (folder == "/") {
    return !path.empty() && path.front() == '/';
  }
  return path == folder ||
         (path.size() > folder.size() && path.compare(0, folder.size(), folder) == 0 &&
          path[folder.size()] == '/');
}

std::vector<ProtectedPath> protected_paths(const ProtectionInputs& inputs) {
  const std::string& home = inputs.home == "/" ? std::string() : inputs.home;
  std::vector<ProtectedPath> out;

  // The gate's own configuration: sandgate's folder, goose's sandbox folder (goose protected
  // it unconditionally too), and whatever files this gate was pointed at.
  add(out, home + "/.config/sandgate", true, true);
  add(out, home + "/.config/goose/sandbox", true, true);
  for (const auto& file : inputs.gate_files) {
    if (!file.empty()) {
      add(out, file, false, true);
    }
  }
  if (!inputs.protect_files) {
    return out;
  }

  for (auto name : kShellFiles) {
    add(out, home + "/" + std::string(name), false, false);
  }
  add(out, home + "/.config/fish", true, false);
  add(out, home + "/.ssh", true, false);    // authorized_keys, config (ProxyCommand, LocalCommand)
  add(out, home + "/.gnupg", true, false);  // gpg.conf and agent configuration run programs
  add(out, home + "/.config/goose", true, false);  // goose's config names the commands it runs
  if (inputs.platform == Platform::macos) {
    add(out, home + "/Library/LaunchAgents", true, false);  // runs at the next login
  } else {
    add(out, home + "/.config/autostart", true, false);  // XDG autostart: runs at the next login
    add(out, home + "/.config/systemd", true, false);    // systemd user units and timers
  }
  return out;
}

}  // namespace sandgate::sandbox
