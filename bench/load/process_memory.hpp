// Reads another process's memory use from /proc, to price an idle tunnel in the proxy under test.
#pragma once

#include <cstdint>
#include <optional>

namespace sandgate::load {

// Kilobytes as the kernel reports them. `anonymous` is the private anonymous memory (heap, stacks,
// buffers: the "user memory" a tunnel costs); `rss` also counts shared file pages, `pss` divides
// shared pages among their sharers. pss is 0 when only /proc/PID/status could be read.
struct memory_sample {
  std::uint64_t rss_kb = 0;
  std::uint64_t pss_kb = 0;
  std::uint64_t anonymous_kb = 0;
};

// From /proc/PID/smaps_rollup (one walk of the whole address space, Linux >= 4.14), falling back
// to /proc/PID/status (VmRSS, RssAnon). nullopt when the process is gone or not readable.
// Blocking file reads: call between measurements, not from a busy event loop.
std::optional<memory_sample> read_process_memory(int pid);

}  // namespace sandgate::load
