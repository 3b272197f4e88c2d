// The profile's options. See profile_options.hpp.
#include "sandbox-profile/macos/profile_options.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "sandbox-profile/plan/credential_stores.hpp"
#include "sandbox-profile/plan/resolved_path.hpp"

namespace sandgate::sandbox {

namespace {

// The passwd entry's home for this user, resolved; "" when there is none.
std::string account_home() {
  const passwd* account = ::getpwuid(::geteuid());
  if (account == nullptr || account->pw_dir == nullptr || account->pw_dir[0] != '/') {
    return {};
  }
  return resolved_path(account->pw_dir);
}

// kHomeCaches below `home` that exist as folders, not links: a link would grant its target.
std::vector<std::string> existing_home_caches(const std::string& home) {
  std::vector<std::string> out;
  if (home.empty() || home == "/") {
    return out;
  }
  for (const char* name : kHomeCaches) {
    const std::string path = home + name;
    struct stat info {};
    if (::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
      out.push_back(path);
    }
  }
  return out;
}

// The terminals on standard input, output and error, resolved, without duplicates.
std::vector<std::string> inherited_terminals() {
  std::vector<std::string> out;
  for (int fd = 0; fd <= 2; ++fd) {
    const char* name = ::isatty(fd) != 0 ? ::ttyname(fd) : nullptr;
    if (name != nullptr && name[0] == '/') {
      std::string path = resolved_path(name);
      if (std::find(out.begin(), out.end(), path) == out.end()) {
        out.push_back(std::move(path));
      }
    }
  }
  return out;
}

}  // namespace

ProfileOptions profile_options(const SandboxSettings& sandbox, const GateView& gate,
                               const SandboxFlags& flags, std::uint16_t proxy_port,
                               const std::string& home, const std::string& ssh_auth_sock) {
  ProfileOptions options;
  options.home = resolved_path(home);
  options.real_home = account_home();
  if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir != nullptr && tmpdir[0] != '\0') {
    options.temp_dir = resolved_path(tmpdir);
  }
  for (const auto& path : flags.allow_writes) {
    options.allow_writes.push_back(resolved_path(path));
  }
  options.home_caches = existing_home_caches(options.home);
  options.terminals = inherited_terminals();
  options.proxy_port = proxy_port;
  options.allow_localhost_ports = flags.allow_localhost_ports;
  options.allow_inbound_ports = flags.allow_inbound_ports;
  for (const auto& path : flags.allow_unix_sockets) {
    std::string resolved = resolved_path(path);
    std::error_code ec;
    auto& list = std::filesystem::is_directory(resolved, ec) ? options.allow_unix_socket_folders
                                                             : options.allow_unix_sockets;
    list.push_back(std::move(resolved));
  }
  options.strict_unix_sockets = flags.strict_unix_sockets;
  options.allow_local_bind = flags.allow_local_bind;
  options.allow_trustd = flags.allow_trustd;
  if (!gate.unix_socket.empty()) {
    options.gate_unix_socket = resolved_path(gate.unix_socket);
  }
  options.ssh_auth_sock = ssh_auth_sock.empty() ? std::string() : resolved_path(ssh_auth_sock);
  options.protect_files = sandbox.protect_files;
  options.block_raw_sockets = sandbox.block_raw_sockets;
  options.block_tunneling = sandbox.block_tunneling;
  options.gate_files = gate_files(gate);
  for (const auto& folder : gate.unreadable) {
    options.unreadable.push_back(resolved_path(folder));
  }
  std::vector<std::string> allow_reads;
  for (const auto& path : flags.allow_reads) {
    allow_reads.push_back(resolved_path(path));
  }
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    environment.emplace_back(*entry);
  }
  std::vector<std::string> homes = {options.home};
  if (!options.real_home.empty() && options.real_home != options.home) {
    homes.push_back(options.real_home);
  }
  CredentialStores stores = credential_stores(homes, environment, allow_reads, /*macos=*/true);
  add_gate_secrets(stores, gate.secret_files);
  options.secret_folders = stores.folders;
  options.secret_files = stores.files;
  options.secret_shown = stores.shown;
  ProtectionInputs inputs = with_process_inputs(protection_inputs(options));
  options.working_directory = inputs.working_directory;
  options.git_dirs = inputs.git_dirs;
  options.path_entries = inputs.path_entries;
  options.own_executables = inputs.own_executables;
  options.resolved_spellings = resolved_spellings(profile_protected_paths(options));
  return options;
}

void add_run_places(ProfileOptions& options, const RunPlaces& places) {
  if (!places.relayed_terminal.empty()) {
    options.terminals = {resolved_path(places.relayed_terminal)};
    options.terminals_relayed = true;
  }
  if (!places.private_folder.empty()) {
    options.private_folders.push_back(resolved_path(places.private_folder));
  }
}

}  // namespace sandgate::sandbox
