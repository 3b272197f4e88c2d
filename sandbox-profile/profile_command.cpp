// `sandgate profile`. See profile_command.hpp.
#include "sandbox-profile/profile_command.hpp"

#include <ostream>

#include "sandbox-profile/profile.hpp"

namespace sandgate::sandbox {
namespace {

constexpr int kUsageError = 2;

std::string env_or_empty(const char* name) {
  auto value = settings::process_env(name);
  return value ? *value : std::string();
}

}  // namespace

int run_profile(const settings::Settings& settings, const SandboxFlags& flags,
                std::optional<std::uint16_t> proxy_port, std::ostream& out, std::ostream& err) {
  const std::uint16_t port = proxy_port.value_or(listen_port(settings));
  // A gate on a unix socket (listen unix:PATH) needs no port: the socket is allowed instead.
  if (port == 0 && !settings::unix_listen_path(settings.listen)) {
    err << "sandgate profile: the profile needs the gate's port: the listen setting ("
        << settings.listen << ") has none; give --proxy-port N\n";
    return kUsageError;
  }
  auto profile = generate_profile(profile_options(settings, flags, port, settings::home_directory(),
                                                  env_or_empty("SSH_AUTH_SOCK")));
  if (!profile) {
    err << "sandgate profile: " << profile.error() << "\n";
    return kUsageError;
  }
  out << *profile;
  out.flush();
  return out ? 0 : kUsageError;
}

}  // namespace sandgate::sandbox
