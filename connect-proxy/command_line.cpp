// sandgate-connect's command line. See command_line.hpp.
#include "connect-proxy/command_line.hpp"

#include <charconv>

namespace sandgate::connect_proxy {

std::string usage() {
  return "usage: sandgate-connect [--proxy ADDR:PORT] [--timeout SECONDS] HOST PORT\n"
         "\n"
         "Opens a tunnel to HOST:PORT through an HTTP CONNECT proxy (sandgate) and relays it\n"
         "with stdin and stdout; made to be ssh's ProxyCommand:\n"
         "  ssh -o ProxyCommand='sandgate-connect %h %p' git@github.com\n"
         "\n"
         "The proxy: --proxy, else 127.0.0.1:$SANDBOX_PROXY_PORT, else the first of HTTPS_PROXY,\n"
         "https_proxy, ALL_PROXY, all_proxy (http://HOST:PORT, http://[V6]:PORT or HOST:PORT).\n"
         "A gate that requires a token gets it from the address (http://USER:TOKEN@HOST:PORT),\n"
         "else from SANDGATE_TOKEN, else from the first line of the file SANDGATE_TOKEN_FILE.\n"
         "--timeout bounds connecting to the proxy and its answer (default 30 s).\n"
         "Exit status: 0 after the tunnel closed, 255 when the proxy or the destination cannot\n"
         "be reached or the proxy refused, 2 for a bad command line or proxy setting.\n";
}

Expected<Options, std::string> parse_command_line(const std::vector<std::string>& arguments) {
  Options options;
  std::vector<std::string> positional;
  bool options_done = false;

  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const std::string& argument = arguments[i];
    if (options_done || argument.empty() || argument[0] != '-' || argument == "-") {
      positional.push_back(argument);
      continue;
    }
    if (argument == "--") {
      options_done = true;
      continue;
    }
    if (argument == "-h" || argument == "--help") {
      options.help = true;
      return options;
    }
    if (argument == "--version") {
      options.version = true;
      return options;
    }

    // Options with a value: `--name VALUE` or `--name=VALUE`.
    std::string name = argument;
    std::optional<std::string> value;
    if (auto equals = argument.find('='); equals != std::string::npos) {
      name = argument.substr(0, equals);
      value = argument.substr(equals + 1);
    }
    if (name != "--proxy" && name != "--timeout") {
      return Unexpected("unknown option '" + name + "'");
    }
    if (!value) {
      if (i + 1 >= arguments.size()) {
        return Unexpected(name + " needs a value");
      }
      value = arguments[++i];
    }
    if (name == "--proxy") {
      options.proxy = *value;
    } else {
      unsigned seconds = 0;
      auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), seconds);
      if (value->empty() || ec != std::errc() || end != value->data() + value->size() ||
          seconds == 0 || seconds > 3600) {
        return Unexpected("--timeout '" + *value + "' is not a number of seconds from 1 to 3600");
      }
      options.timeout = std::chrono::seconds(seconds);
    }
  }

  if (positional.size() != 2) {
    return Unexpected(
        std::string(positional.size() < 2 ? "HOST and PORT are required" : "too many arguments"));
  }
  options.host = positional[0];
  options.port = positional[1];
  return options;
}

}  // namespace sandgate::connect_proxy
