// Reads another process's memory use and CPU time from /proc: to price an idle tunnel in the proxy
// under test, and what each setup or byte costs it in CPU time (user + kernel, all its threads).
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

// CPU time a process has used so far, all threads, in seconds: user and system (kernel work done
// on its behalf, which is where splice(2) and TCP spend theirs). Clock-tick resolution (10 ms).
struct cpu_sample {
  double user_s = 0;
  double system_s = 0;
};

// From /proc/PID/stat; nullopt when the process is gone or not readable.
std::optional<cpu_sample> read_process_cpu(int pid);

}  // namespace sandgate::load
