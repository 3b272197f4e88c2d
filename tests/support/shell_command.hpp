// Runs a shell command from a test, for tests that drive real tools (curl, promtool, ...).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace sandgate::testing {

struct CommandResult {
  int exit_code = -1;  // -1 when it could not be started or did not exit normally
  std::string output;  // stdout and stderr together
};

// `sh -c COMMAND`, waiting for it to end.
inline CommandResult run_shell(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen(("(" + command + ") 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    result.output = "popen failed";
    return result;
  }
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
    result.output.append(buffer, n);
  }
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace sandgate::testing
