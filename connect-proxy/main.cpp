// sandgate-connect: ssh's ProxyCommand through sandgate. Wires the pieces: command line, where
// the proxy is, the tunnel, the relay. Exit status: 0 when the tunnel ended normally, 255 when a
// connection failed or was refused (like ssh), 2 for a bad command line or proxy setting.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "connect-proxy/command_line.hpp"
#include "connect-proxy/connect_request.hpp"
#include "connect-proxy/proxy_dial.hpp"
#include "connect-proxy/proxy_location.hpp"
#include "connect-proxy/relay.hpp"
#include "connect-proxy/ssh_disconnect.hpp"

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitConnection = 255;
// How long a refusal's disconnect waits for ssh to read it and hang up.
constexpr std::chrono::milliseconds kDisconnectLinger{5000};

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

  std::optional<ResponseHead> refusal;
  auto tunnel = open_tunnel(*proxy, *authority, options->timeout, &refusal);
  if (!tunnel) {
    const int status = fail(kExitConnection, tunnel.error());
    if (refusal && ::isatty(STDOUT_FILENO) == 0) {
      // Said twice: on stderr (first: ssh ends this process once it has hung up), and in-band
      // as an SSH disconnect, which ssh prints as "Received disconnect from UNKNOWN port
      // 65535:1: <the refusal>" (ssh_disconnect.hpp) where a client that hides the
      // ProxyCommand's stderr still shows it. Not onto a terminal: there it would be binary
      // noise, and no ssh is reading.
      deliver_disconnect(STDOUT_FILENO, STDIN_FILENO,
                         ssh_disconnect_stream("sandgate: " + tunnel.error(),
                                               disconnect_reason_for(refusal->status)),
                         kDisconnectLinger);
    }
    return status;
  }
  const auto result =
      relay(STDIN_FILENO, STDOUT_FILENO, tunnel->socket.get(), std::move(tunnel->early_bytes));
  if (result.error) {
    return fail(kExitConnection, *result.error + " (" + *authority + ")");
  }
  return 0;
}
