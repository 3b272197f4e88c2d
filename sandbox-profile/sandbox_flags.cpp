// The shared flags. See sandbox_flags.hpp.
#include "sandbox-profile/sandbox_flags.hpp"

#include <charconv>
#include <filesystem>
#include <system_error>

namespace sandgate::sandbox {

std::vector<std::string> gate_files(const settings::Settings& settings) {
  std::vector<std::string> out;
  for (const std::string* path : {&settings.blocklist_path, &settings.allowlist_path,
                                  &settings.config_path, &settings.log_file}) {
    if (!path->empty()) {
      out.push_back(resolved_path(*path));
    }
  }
  return out;
}

std::string resolved_path(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty() || path.find('\0') != std::string::npos) {
    return path;  // left for check_path() to refuse with a precise message
  }
  std::error_code ec;
  fs::path absolute = fs::absolute(fs::path(path), ec);
  if (ec) {
    absolute = fs::path(path);
  }
  fs::path resolved = fs::weakly_canonical(absolute, ec);
  if (ec) {
    resolved = absolute.lexically_normal();
  }
  std::string text = resolved.string();
  while (text.size() > 1 && text.back() == '/') {
    text.pop_back();
  }
  return text;
}

ProfileOptions profile_options(const settings::Settings& settings, const SandboxFlags& flags,
                               std::uint16_t proxy_port, const std::string& home,
                               const std::string& ssh_auth_sock) {
  ProfileOptions options;
  options.home = resolved_path(home);
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
  if (auto socket = settings::unix_listen_path(settings.listen)) {
    options.gate_unix_socket = resolved_path(std::string(*socket));
  }
  options.ssh_auth_sock = ssh_auth_sock.empty() ? std::string() : resolved_path(ssh_auth_sock);
  options.protect_files = settings.protect_files;
  options.block_raw_sockets = settings.block_raw_sockets;
  options.block_tunneling = settings.block_tunneling;
  options.gate_files = gate_files(settings);
  ProtectionInputs inputs = with_process_inputs(protection_inputs(options));
  options.working_directory = inputs.working_directory;
  options.git_dirs = inputs.git_dirs;
  options.path_entries = inputs.path_entries;
  options.own_executables = inputs.own_executables;
  options.resolved_spellings = resolved_spellings(protected_paths(protection_inputs(options)));
  return options;
}

std::uint16_t listen_port(const settings::Settings& settings) {
  const auto colon = settings.listen.rfind(':');
  if (colon == std::string::npos) {
    return 0;
  }
  unsigned value = 0;
  const char* first = settings.listen.data() + colon + 1;
  const char* last = settings.listen.data() + settings.listen.size();
  auto [end, error] = std::from_chars(first, last, value);
  if (error != std::errc() || end != last || value > 65535) {
    return 0;
  }
  return static_cast<std::uint16_t>(value);
}

}  // namespace sandgate::sandbox
