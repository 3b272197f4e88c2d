// The pipe pool. See pipe_pool.hpp.
#include "proxy/relay/pipe_pool.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace sandgate::relay {
namespace {

// A pipe's capacity. 256 KiB: MEASURED_REASON (bench/results/2026-11-26/pipe-size.md).
constexpr std::size_t kPipeBytes = 256 * 1024;
// Empty pipes' capacity a pool keeps for reuse: 4 MiB, what the 64 pipes of 64 KiB it kept
// before pipes grew came to.
constexpr std::size_t kKeepBytes = 4 * 1024 * 1024;
constexpr std::size_t kPage = 4096;
constexpr std::size_t kKernelDefaultMax = 1024 * 1024;

}  // namespace

std::size_t pipe_max_size() {
  std::ifstream file("/proc/sys/fs/pipe-max-size");
  std::size_t value = 0;
  if (file >> value && value >= kPage) {
    return value;
  }
  return kKernelDefaultMax;
}

PipePool::PipePool() : PipePool(kPipeBytes, kKeepBytes) {}

PipePool::PipePool(std::size_t pipe_bytes, std::size_t keep_bytes)
    : pipe_bytes_(std::max(kPage, std::min(pipe_bytes, pipe_max_size()))),
      keep_(std::max<std::size_t>(1, keep_bytes / pipe_bytes_)) {
  free_.reserve(keep_);
}

PipePool::~PipePool() {
  for (auto pipe : free_) {
    destroy(pipe);
  }
}

PipePool::Pipe PipePool::acquire() {
  if (!free_.empty()) {
    Pipe pipe = free_.back();
    free_.pop_back();
    return pipe;
  }
#ifdef __linux__
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    return {};
  }
  // A failure (the user's pipe quota) leaves the pipe at the size the kernel gave it, which
  // F_GETPIPE_SZ reports; the relay moves at most that much per splice.
  (void)::fcntl(fds[1], F_SETPIPE_SZ, static_cast<int>(pipe_bytes_));
  const int capacity = ::fcntl(fds[1], F_GETPIPE_SZ);
  return {fds[0], fds[1], capacity > 0 ? static_cast<std::size_t>(capacity) : kPage};
#else
  return {};
#endif
}

void PipePool::release(Pipe pipe) {
  if (pipe.read_fd < 0) {
    return;
  }
  if (free_.size() < keep_) {
    free_.push_back(pipe);
  } else {
    destroy(pipe);
  }
}

void PipePool::destroy(Pipe pipe) {
  if (pipe.read_fd >= 0) {
    ::close(pipe.read_fd);
    ::close(pipe.write_fd);
  }
}

}  // namespace sandgate::relay
