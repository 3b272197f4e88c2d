// Command line of sandgate-load: `origin` (serve echo/source/sink), `run` (drive a workload) and
// `compare` (several proxies side by side in rounds).
#pragma once

#include <optional>

#include "bench/load/compare.hpp"
#include "bench/load/origin_server.hpp"
#include "bench/load/workloads.hpp"

namespace sandgate::load {

struct command_line {
  enum class command { origin, run, compare };
  command which = command::run;
  origin_options origin;
  run_options run;
  compare_options compare;
};

// Parses and validates argv: every error names the option and what it accepts. On --help or an
// error, prints to stdout/stderr and returns nullopt with `exit_code` set (0 for help, 2 else).
std::optional<command_line> parse_command_line(int argc, char** argv, int& exit_code);

}  // namespace sandgate::load
