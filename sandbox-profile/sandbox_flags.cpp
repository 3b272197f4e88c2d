// The shared flags. See sandbox_flags.hpp.
#include "sandbox-profile/sandbox_flags.hpp"

#include <filesystem>
#include <system_error>

namespace sandgate::sandbox {

std::vector<std::string> gate_files(const GateView& gate) {
  std::vector<std::string> out;
  for (const std::string& path : gate.files) {
    if (!path.empty()) {
      out.push_back(resolved_path(path));
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

ProfileOptions profile_options(const SandboxSettings& sandbox, const GateView& gate,
                               const SandboxFlags& flags, std::uint16_t proxy_port,
                               const std::string& home, const std::string& ssh_auth_sock) {
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
  if (!gate.unix_socket.empty()) {
    options.gate_unix_socket = resolved_path(gate.unix_socket);
  }
  options.ssh_auth_sock = ssh_auth_sock.empty() ? std::string() : resolved_path(ssh_auth_sock);
  options.protect_files = sandbox.protect_files;
  options.block_raw_sockets = sandbox.block_raw_sockets;
  options.block_tunneling = sandbox.block_tunneling;
  options.gate_files = gate_files(gate);
  ProtectionInputs inputs = with_process_inputs(protection_inputs(options));
  options.working_directory = inputs.working_directory;
  options.git_dirs = inputs.git_dirs;
  options.path_entries = inputs.path_entries;
  options.own_executables = inputs.own_executables;
  options.resolved_spellings = resolved_spellings(protected_paths(protection_inputs(options)));
  return options;
}

}  // namespace sandgate::sandbox
