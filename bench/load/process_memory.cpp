// /proc readers for another process's memory (see process_memory.hpp).
#include "bench/load/process_memory.hpp"

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

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

std::optional<cpu_sample> read_process_cpu(int pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  // The command name (field 2) is in parentheses and may hold spaces: count fields after the
  // last ')'. There, field 3 (state) is index 0, so utime (14) is index 11 and stime (15) 12.
  const auto close = text.rfind(')');
  if (close == std::string::npos) {
    return std::nullopt;
  }
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> fields{std::istream_iterator<std::string>(rest),
                                  std::istream_iterator<std::string>()};
  if (fields.size() < 13) {
    return std::nullopt;
  }
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return cpu_sample{std::stod(fields[11]) / ticks, std::stod(fields[12]) / ticks};
}

}  // namespace sandgate::load
