// /proc readers for another process's memory (see process_memory.hpp).
#include "bench/load/process_memory.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace sandgate::load {

namespace {

// Sums "Name:   1234 kB" lines: smaps_rollup has one of each, but summing is right either way.
bool read_kb_fields(const std::string& path, const char* rss_name, const char* pss_name,
                    const char* anon_name, memory_sample& sample) {
  std::ifstream file(path);
  if (!file) {
    return false;
  }
  bool any = false;
  std::string line;
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    std::string name;
    std::uint64_t kb = 0;
    if (!(fields >> name >> kb)) {
      continue;
    }
    if (name == rss_name) {
      sample.rss_kb += kb;
      any = true;
    } else if (pss_name != nullptr && name == pss_name) {
      sample.pss_kb += kb;
    } else if (name == anon_name) {
      sample.anonymous_kb += kb;
    }
  }
  return any;
}

}  // namespace

std::optional<memory_sample> read_process_memory(int pid) {
  const std::string base = "/proc/" + std::to_string(pid) + "/";
  memory_sample sample;
  if (read_kb_fields(base + "smaps_rollup", "Rss:", "Pss:", "Anonymous:", sample)) {
    return sample;
  }
  sample = {};
  if (read_kb_fields(base + "status", "VmRSS:", nullptr, "RssAnon:", sample)) {
    return sample;
  }
  return std::nullopt;
}

}  // namespace sandgate::load
