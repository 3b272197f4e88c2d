// `sandgate profile`. See profile_command.hpp.
#include "sandbox-profile/macos/profile_command.hpp"

#include <ostream>

#include "sandbox-profile/macos/profile.hpp"
#include "sandbox-profile/macos/profile_options.hpp"
#include "sandbox-profile/process/run_support.hpp"

namespace sandgate::sandbox {
namespace {

constexpr int kUsageError = 2;

}  // namespace

int run_profile(const ProfileRequest& request, std::ostream& out, std::ostream& err) {
  // A gate on a unix socket (listen unix:PATH) needs no port: the socket is allowed instead.
  if (request.proxy_port == 0 && request.gate.unix_socket.empty()) {
    err << "sandgate profile: the profile needs the gate's port: the listen setting ("
        << request.listen_text << ") has none; give --proxy-port N\n";
    return kUsageError;
  }
  ProfileOptions options =
      profile_options(request.sandbox, request.gate, request.flags, request.proxy_port,
                      request.home, env_or_empty("SSH_AUTH_SOCK"));
  // A gate listening on ::1 is reached over IPv6 only; any other listen address is 127.0.0.1's.
  options.gate_on_ipv6 = request.listen_text.starts_with("[::1]");
  auto profile = generate_profile(options);
  if (!profile) {
    err << "sandgate profile: " << profile.error() << "\n";
    return kUsageError;
  }
  out << *profile;
  out.flush();
  return out ? 0 : kUsageError;
}

}  // namespace sandgate::sandbox
