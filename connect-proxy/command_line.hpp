// sandgate-connect's command line: `sandgate-connect [--proxy ADDR:PORT] [--timeout SECONDS]
// HOST PORT`, as ssh's ProxyCommand runs it with %h and %p.
//
// Pure functions on values; thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "rules/expected.hpp"

namespace sandgate::connect_proxy {

struct Options {
  std::optional<std::string> proxy;  // --proxy; unset: the environment decides
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};  // proxy connect + its answer
  std::string host;
  std::string port;
  bool help = false;     // -h / --help: print usage() and exit 0
  bool version = false;  // --version
};

// Parses the arguments after the program name. The error is one sentence naming the argument.
Expected<Options, std::string> parse_command_line(const std::vector<std::string>& arguments);

// The usage text, several lines, ending with a newline.
std::string usage();

}  // namespace sandgate::connect_proxy
