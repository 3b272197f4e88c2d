// sandgate-connect: ssh's ProxyCommand through sandgate. Wires the pieces: command line, where
// the proxy is, the tunnel, the relay. Exit status: 0 when the tunnel ended normally, 255 when a
// connection failed or was refused (like ssh), 2 for a bad command line or proxy setting.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "connect-proxy/command_line.hpp"
#include "connect-proxy/connect_request.hpp"
#include "connect-proxy/proxy_dial.hpp"
#include "connect-proxy/proxy_location.hpp"
#include "connect-proxy/relay.hpp"

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitConnection = 255;

int fail(int status, const std::string& message) {
  std::fprintf(stderr, "sandgate-connect: %s\n", message.c_str());
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sandgate::connect_proxy;
  // A write to a closed pipe or socket is an error value here, never a signal.
  ::signal(SIGPIPE, SIG_IGN);

  auto options = parse_command_line(std::vector<std::string>(argv + 1, argv + argc));
  if (!options) {
    std::fprintf(stderr, "sandgate-connect: %s\n%s", options.error().c_str(), usage().c_str());
    return kExitUsage;
  }
  if (options->help) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  if (options->version) {
    std::puts("sandgate-connect " SANDGATE_VERSION);
    return 0;
  }

  auto proxy = find_proxy(options->proxy, process_env);
  if (!proxy) {
    return fail(kExitUsage, proxy.error());
  }
  // A token for a gate that requires one (SANDGATE_TOKEN): from the proxy address, else the
  // environment.
  if (proxy->credentials.empty()) {
    auto credentials = credentials_from_environment(process_env);
    if (!credentials) {
      return fail(kExitUsage, credentials.error());
    }
    proxy->credentials = std::move(*credentials);
  }
  auto authority = make_authority(options->host, options->port);
  if (!authority) {
    return fail(kExitUsage, authority.error());
  }

  auto tunnel = open_tunnel(*proxy, *authority, options->timeout);
  if (!tunnel) {
    return fail(kExitConnection, tunnel.error());
  }
  const auto result =
      relay(STDIN_FILENO, STDOUT_FILENO, tunnel->socket.get(), std::move(tunnel->early_bytes));
  if (result.error) {
    return fail(kExitConnection, *result.error + " (" + *authority + ")");
  }
  return 0;
}
