// The protected paths. See protected_paths.hpp.
#include "sandbox-profile/plan/protected_paths.hpp"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef __APPLE__
#include <mach-o/dyld.h>
#endif

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string_view>

#include "sandbox-profile/plan/auto_run_files.hpp"

namespace sandgate::sandbox {
namespace {

// Shell start-up files: each runs code the next time the user opens a shell, outside the
// sandbox. bash reads the first of .bash_profile, .bash_login and .profile for a login shell, so
// creating a missing one is as good as editing an existing one: all are protected. Most
// distributions' .bashrc sources .bash_aliases. fish keeps its start-up code in a folder
// (config.fish, conf.d/, functions/), and many .bashrc files source every file in ~/.bashrc.d.
constexpr std::array<std::string_view, 11> kShellFiles = {
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".bash_aliases",
    ".zshrc",  ".zshenv",       ".zprofile",   ".zlogin",      ".zlogout"};
constexpr std::array<std::string_view, 2> kShellFolders = {".bashrc.d", ".config/fish"};

// ~/.ssh: what runs code or grants access, not the whole folder. `config` (ProxyCommand,
// LocalCommand, Match exec) and `config.d` (the usual Include folder) run programs at the next
// ssh; authorized_keys lets someone in; `rc` and `environment` are read by sshd at login; the
// default key files are the user's identity. known_hosts stays writable (ssh appends a new
// host's key there), and so does the folder for agent and ControlMaster sockets that exist;
// connecting to them is the unix socket allow-list's business, not this one's.
constexpr std::array<std::string_view, 17> kSshFiles = {
    "config",         "authorized_keys", "authorized_keys2",  "rc",
    "environment",    "id_rsa",          "id_rsa.pub",        "id_ecdsa",
    "id_ecdsa.pub",   "id_ecdsa_sk",     "id_ecdsa_sk.pub",   "id_ed25519",
    "id_ed25519.pub", "id_ed25519_sk",   "id_ed25519_sk.pub", "id_dsa",
    "id_dsa.pub"};
constexpr std::array<std::string_view, 1> kSshFolders = {"config.d"};

// ~/.gnupg: the configuration files name programs gpg and its agent run (pinentry-program,
// scdaemon-program, keyserver helpers), the keyrings and trust database decide whose signatures
// the user's gpg accepts, the private keys are the user's identity. Lock files (dotlock creates
// `.#lk*` and links it to `*.lock`), random_seed and the agent's sockets stay writable, so gpg
// keeps working inside the sandbox.
constexpr std::array<std::string_view, 12> kGnupgFiles = {
    "gpg.conf",   "gpg-agent.conf", "scdaemon.conf", "dirmngr.conf", "common.conf", "gpgsm.conf",
    "sshcontrol", "pubring.kbx",    "pubring.gpg",   "secring.gpg",  "trustdb.gpg", "tofu.db"};
constexpr std::array<std::string_view, 3> kGnupgFolders = {"private-keys-v1.d", "public-keys.d",
                                                           "openpgp-revocs.d"};

// Places in the home that run code later on every system: git's user configuration
// (core.fsmonitor, core.pager, aliases, hooksPath, credential helpers) and ~/.local/bin, which
// most distributions and pipx put on PATH.
constexpr std::array<std::string_view, 1> kCommonFiles = {".gitconfig"};
constexpr std::array<std::string_view, 3> kCommonFolders = {".config/git", ".local/bin",
                                                            ".config/goose"};

// Linux: login-time environment and programs (environment.d, pam_environment, X session
// scripts), XDG autostart, systemd user units (both folders systemd reads them from, and
// user.conf's environment), D-Bus session services (dbus-daemon starts them on demand, outside
// the sandbox's namespaces).
constexpr std::array<std::string_view, 4> kLinuxFiles = {".pam_environment", ".xprofile",
                                                         ".xsessionrc", ".xinitrc"};
constexpr std::array<std::string_view, 5> kLinuxFolders = {
    ".config/environment.d", ".config/autostart", ".config/systemd", ".local/share/systemd/user",
    ".local/share/dbus-1/services"};

// macOS: launchd agents in the home run at the next login. System-wide places that run code
// (cron and at spools, launchd daemons and agents, /etc: shells' system start-up files, sudoers,
// periodic scripts) are writable only by root, and are protected for the case where sandgate is
// run as root. /usr/lib/cron is a link to /private/var/at; both spellings are listed.
constexpr std::array<std::string_view, 1> kMacFolders = {"Library/LaunchAgents"};
constexpr std::array<std::string_view, 5> kMacSystemFolders = {
    "/private/var/at", "/usr/lib/cron", "/Library/LaunchAgents", "/Library/LaunchDaemons",
    "/private/etc"};

void add(std::vector<ProtectedPath>& out, std::string path, bool tree, bool always) {
  for (const auto& existing : out) {
    if (existing.path == path || (existing.tree && is_within(path, existing.path))) {
      return;
    }
  }
  out.push_back({std::move(path), tree, always});
}

template <std::size_t N>
void add_under(std::vector<ProtectedPath>& out, const std::string& folder,
               const std::array<std::string_view, N>& names, bool tree) {
  for (auto name : names) {
    add(out, folder + "/" + std::string(name), tree, false);
  }
}

// A PATH folder is protected unless protecting it would protect the home or the working folder
// wholesale, or it lies inside the working folder (the work itself), see ProtectionInputs.
bool protect_path_entry(const std::string& entry, const std::string& home,
                        const std::string& working_directory) {
  if (entry.empty() || entry.front() != '/' || entry == "/") {
    return false;
  }
  if (!home.empty() && is_within(home, entry)) {
    return false;
  }
  if (!working_directory.empty()) {
    if (is_within(working_directory, entry)) {
      return false;
    }
    const bool work_holds_home = !home.empty() && is_within(home, working_directory);
    if (is_within(entry, working_directory) && !work_holds_home) {
      return false;
    }
  }
  return true;
}

std::string normal_absolute(std::string path) {
  while (path.size() > 1 && path.back() == '/') {
    path.pop_back();
  }
  return path;
}

// `path` made normal lexically: no `.`, `..`, empty components or trailing slash.
std::string lexically_normal(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t start = 1;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) {
      end = path.size();
    }
    const std::string part = path.substr(start, end - start);
    if (part == "..") {
      if (!parts.empty()) {
        parts.pop_back();
      }
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = end + 1;
  }
  std::string out;
  for (const auto& part : parts) {
    out += "/" + part;
  }
  return out.empty() ? "/" : out;
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) {
    line.pop_back();
  }
  return line;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::string join(const std::string& folder, const std::string& name) {
  if (!name.empty() && name.front() == '/') {
    return lexically_normal(name);
  }
  return lexically_normal(folder + "/" + name);
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
  // it unconditionally too), whatever files this gate was pointed at, and sandgate's own
  // executables (the next `sandgate run` would otherwise run the command's replacement).
  add(out, home + "/.config/sandgate", true, true);
  add(out, home + "/.config/goose/sandbox", true, true);
  for (const auto& file : inputs.gate_files) {
    if (!file.empty()) {
      add(out, file, false, true);
    }
  }
  for (const auto& file : inputs.own_executables) {
    if (!file.empty()) {
      add(out, file, false, true);
    }
  }
  if (!inputs.protect_files) {
    return out;
  }

  add_under(out, home, kShellFiles, false);
  add_under(out, home, kShellFolders, true);
  add_under(out, home + "/.ssh", kSshFiles, false);
  add_under(out, home + "/.ssh", kSshFolders, true);
  add_under(out, home + "/.gnupg", kGnupgFiles, false);
  add_under(out, home + "/.gnupg", kGnupgFolders, true);
  add_under(out, home, kCommonFiles, false);
  add_under(out, home, kCommonFolders, true);
  if (inputs.platform == Platform::macos) {
    add_under(out, home, kMacFolders, true);
    for (auto folder : kMacSystemFolders) {
      add(out, std::string(folder), true, false);
    }
  } else {
    add_under(out, home, kLinuxFiles, false);
    add_under(out, home, kLinuxFolders, true);
  }

  // The repository being worked on: git runs its hooks and obeys its config (core.fsmonitor,
  // core.hooksPath, aliases, filters) the next time the user runs git there.
  for (const auto& git_dir : inputs.git_dirs) {
    if (git_dir.empty() || git_dir.front() != '/') {
      continue;
    }
    add(out, git_dir + "/hooks", true, false);
    add(out, git_dir + "/config", false, false);
    add(out, git_dir + "/config.worktree", false, false);
  }

  // Folders on PATH: a program dropped there runs when the user next types its name.
  for (const auto& entry : inputs.path_entries) {
    const std::string folder = normal_absolute(entry);
    if (protect_path_entry(folder, home, inputs.working_directory)) {
      add(out, folder, true, false);
    }
  }
  return out;
}

std::vector<std::string> split_path_list(std::string_view list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(':', start);
    if (end == std::string_view::npos) {
      end = list.size();
    }
    std::string entry = normal_absolute(std::string(list.substr(start, end - start)));
    if (!entry.empty() && entry.front() == '/') {
      bool seen = false;
      for (const auto& existing : out) {
        seen = seen || existing == entry;
      }
      if (!seen) {
        out.push_back(std::move(entry));
      }
    }
    start = end + 1;
  }
  return out;
}

std::string resolve_links(const std::string& path) {
  if (path.empty() || path.front() != '/' || path.find('\0') != std::string::npos) {
    return path;
  }
  // Walk component by component, replacing each symbolic link by its target, so that a link
  // whose target does not exist (yet) is followed too: a write through it lands there.
  std::string pending = lexically_normal(path);
  std::string done;  // resolved prefix, "" for "/"
  int links = 0;
  std::size_t start = 1;
  while (start <= pending.size()) {
    std::size_t end = pending.find('/', start);
    if (end == std::string::npos) {
      end = pending.size();
    }
    const std::string part = pending.substr(start, end - start);
    const std::string rest = end < pending.size() ? pending.substr(end) : std::string();
    start = end + 1;
    if (part.empty()) {
      continue;
    }
    const std::string candidate = done + "/" + part;
    std::array<char, PATH_MAX> buffer{};
    const ssize_t length = ::readlink(candidate.c_str(), buffer.data(), buffer.size() - 1);
    if (length <= 0) {
      done = candidate;  // not a link, or missing: keep the spelling
      continue;
    }
    if (++links > 40) {
      return lexically_normal(path);  // a loop: give up, the spelling stays as given
    }
    const std::string target(buffer.data(), static_cast<std::size_t>(length));
    pending = join(done.empty() ? "/" : done, target) + rest;
    done.clear();
    start = 1;
  }
  return done.empty() ? "/" : done;
}

std::string enclosing_worktree(const std::string& working_directory) {
  if (working_directory.empty() || working_directory.front() != '/') {
    return {};
  }
  for (std::string folder = lexically_normal(working_directory);; folder = parent_of(folder)) {
    if (exists((folder == "/" ? std::string() : folder) + "/.git")) {
      return folder;
    }
    if (folder == "/") {
      return {};
    }
  }
}

std::vector<ProtectedPath> auto_run_paths(const std::string& folder) {
  std::vector<ProtectedPath> out;
  const std::string base = folder == "/" ? std::string() : folder;
  for (const auto& name : auto_run_names()) {
    if (name.read_only) {
      out.push_back({base + "/" + std::string(name.path), name.folder, false});
    }
  }
  return out;
}

std::vector<std::string> enclosing_git_dirs(const std::string& working_directory) {
  const std::string folder = enclosing_worktree(working_directory);
  if (folder.empty()) {
    return {};
  }
  const std::string dot_git = (folder == "/" ? std::string() : folder) + "/.git";
  if (is_directory(dot_git)) {
    return {resolve_links(dot_git)};
  }
  // A linked worktree or a submodule: `.git` is a file "gitdir: PATH".
  const std::string line = read_first_line(dot_git);
  constexpr std::string_view kPrefix = "gitdir: ";
  if (line.rfind(kPrefix, 0) != 0) {
    return {};
  }
  const std::string git_dir = resolve_links(join(folder, line.substr(kPrefix.size())));
  std::vector<std::string> out = {git_dir};
  const std::string common = read_first_line(git_dir + "/commondir");
  if (!common.empty()) {
    const std::string common_dir = resolve_links(join(git_dir, common));
    if (common_dir != git_dir) {
      out.push_back(common_dir);
    }
  }
  return out;
}

std::vector<std::string> path_folders() {
  const char* path = std::getenv("PATH");
  std::vector<std::string> out;
  for (const auto& entry : split_path_list(path == nullptr ? "" : path)) {
    std::string resolved = resolve_links(entry);
    bool seen = false;
    for (const auto& existing : out) {
      seen = seen || existing == resolved;
    }
    if (!seen) {
      out.push_back(std::move(resolved));
    }
  }
  return out;
}

std::vector<std::string> own_executables() {
  std::string self;
#ifdef __APPLE__
  std::uint32_t size = 0;
  _NSGetExecutablePath(nullptr, &size);
  std::string buffer(size, '\0');
  if (_NSGetExecutablePath(buffer.data(), &size) == 0) {
    buffer.resize(std::strlen(buffer.c_str()));
    self = buffer;
  }
#else
  std::array<char, PATH_MAX> buffer{};
  const ssize_t length = ::readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (length > 0) {
    self.assign(buffer.data(), static_cast<std::size_t>(length));
  }
#endif
  if (self.empty() || self.front() != '/') {
    return {};
  }
  self = resolve_links(self);
  return {self, parent_of(self) + "/sandgate-connect"};
}

std::vector<ProtectedPath> resolved_spellings(const std::vector<ProtectedPath>& paths) {
  std::vector<ProtectedPath> out;
  for (const auto& p : paths) {
    std::string resolved = resolve_links(p.path);
    if (resolved == p.path) {
      continue;
    }
    bool seen = false;
    for (const auto& existing : paths) {
      seen = seen || (existing.path == resolved && existing.tree == p.tree);
    }
    for (const auto& existing : out) {
      seen = seen || existing.path == resolved;
    }
    if (!seen) {
      out.push_back({std::move(resolved), p.tree, p.always});
    }
  }
  return out;
}

ProtectionInputs with_process_inputs(ProtectionInputs inputs) {
  std::array<char, PATH_MAX> buffer{};
  if (::getcwd(buffer.data(), buffer.size()) != nullptr) {
    inputs.working_directory = resolve_links(buffer.data());
    inputs.git_dirs = enclosing_git_dirs(inputs.working_directory);
  }
  inputs.path_entries = path_folders();
  inputs.own_executables = own_executables();
  return inputs;
}

}  // namespace sandgate::sandbox
