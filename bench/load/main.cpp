// sandgate-load: wires the command line to the origin server, to one workload run (its result as
// one JSON line on stdout and one human line on stderr), or to a comparison of several proxies.
#include <cstdio>

#include "bench/load/cli.hpp"
#include "bench/load/compare.hpp"
#include "bench/load/origin_server.hpp"
#include "bench/load/report.hpp"
#include "bench/load/workloads.hpp"

int main(int argc, char** argv) {
  using namespace sandgate::load;
  int exit_code = 0;
  const auto line = parse_command_line(argc, argv, exit_code);
  if (!line) {
    return exit_code;
  }
  if (line->which == command_line::command::origin) {
    return run_origin(line->origin);
  }
  if (line->which == command_line::command::compare) {
    return run_compare(line->compare);
  }
  const run_result result = run_workload(line->run);
  std::printf("%s\n", to_json(result).c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "%s\n", to_human(result).c_str());
  // Exit 1 when nothing succeeded, so a script notices a dead target without parsing JSON.
  const bool any = result.workload == "idle" || result.workload.ends_with("-hold")
                       ? result.tunnels_open > 0
                       : result.ops > 0;
  return any ? 0 : 1;
}
