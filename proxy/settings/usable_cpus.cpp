// The CPUs this process may use: the default number of worker threads. See settings.hpp.
#include <sched.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>

#include "proxy/settings/settings.hpp"

namespace sandgate::settings {
namespace {

// The cgroup v2 CPU quota of this process, in CPUs rounded up; nothing when unlimited or unknown.
std::optional<unsigned> cgroup_cpu_quota() {
  std::ifstream cgroup("/proc/self/cgroup");
  std::string line;
  std::string path;
  while (std::getline(cgroup, line)) {
    if (line.starts_with("0::")) {
      path = line.substr(3);
    }
  }
  if (path.empty()) {
    return std::nullopt;
  }
  // The quota of any ancestor limits us too: take the smallest along the way up.
  std::optional<unsigned> smallest;
  for (std::string at = path;; at = at.substr(0, at.rfind('/'))) {
    std::ifstream max_file("/sys/fs/cgroup" + at + "/cpu.max");
    std::string quota;
    std::uint64_t period = 0;
    if (max_file >> quota >> period && quota != "max" && period > 0) {
      try {
        const std::uint64_t q = std::stoull(quota);
        const auto cpus =
            static_cast<unsigned>(std::max<std::uint64_t>(1, (q + period - 1) / period));
        smallest = smallest ? std::min(*smallest, cpus) : cpus;
      } catch (const std::exception&) {
        // An unreadable quota is no quota.
      }
    }
    if (at.empty() || at == "/") {
      break;
    }
  }
  return smallest;
}

}  // namespace

UsableCpus usable_cpus() {
  UsableCpus result;
  result.count = std::max(1u, std::thread::hardware_concurrency());
  result.why = "one per CPU of the machine";
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    const auto allowed = static_cast<unsigned>(CPU_COUNT(&set));
    if (allowed > 0 && allowed != result.count) {
      result.count = allowed;
      result.why = "one per CPU this process may run on (affinity mask)";
    } else if (allowed > 0) {
      result.why = "one per CPU this process may run on";
    }
  }
  if (const auto quota = cgroup_cpu_quota(); quota && *quota < result.count) {
    result.count = *quota;
    result.why = "the cgroup's CPU quota (cpu.max)";
  }
#endif
  return result;
}

}  // namespace sandgate::settings
