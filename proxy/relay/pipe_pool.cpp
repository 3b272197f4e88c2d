// The pipe pool. See pipe_pool.hpp.
#include "proxy/relay/pipe_pool.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace sandgate::relay {
namespace {

// A pipe's capacity. 256 KiB: the proxy spent 8-36% less CPU per byte relayed than with the
// kernel's 64 KiB in every bulk workload measured; 1 MiB saved more only for downloads through
// many tunnels, at four times the user's pipe quota per busy direction
// (bench/results/2026-11-26/pipe-size.md).
constexpr std::size_t kPipeBytes = 256 * 1024;
// The capacity of a worker's pipes together before new ones stay at the kernel's default:
// 32 enlarged pipes (8 MiB), enough for 16 tunnels moving bulk both ways at once. Past that a
// worker's pipes add 64 KiB each, as they all did before pipes were enlarged.
constexpr std::size_t kHoldBytes = 32 * kPipeBytes;
// Empty pipes' capacity a pool keeps for reuse: 4 MiB, what the 64 pipes of 64 KiB it kept
// before pipes were enlarged came to.
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

PipePool::PipePool() : PipePool(Sizes{kPipeBytes, kHoldBytes, kKeepBytes}) {}

PipePool::PipePool(Sizes sizes) : sizes_(sizes) {
  sizes_.pipe_bytes = std::max(kPage, std::min(sizes.pipe_bytes, pipe_max_size()));
}

PipePool::~PipePool() {
  for (auto pipe : free_) {
    close_pipe(pipe);
  }
}

PipePool::Pipe PipePool::acquire() {
  if (!free_.empty()) {
    Pipe pipe = free_.back();
    free_.pop_back();
    kept_bytes_ -= pipe.capacity;
    return pipe;
  }
#ifdef __linux__
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    return {};
  }
  if (held_bytes_ + sizes_.pipe_bytes <= sizes_.hold_bytes) {
    // A failure (the user's pipe quota) leaves the pipe at the size the kernel gave it, which
    // F_GETPIPE_SZ reports; the relay moves at most that much per splice.
    (void)::fcntl(fds[1], F_SETPIPE_SZ, static_cast<int>(sizes_.pipe_bytes));
  }
  const int capacity = ::fcntl(fds[1], F_GETPIPE_SZ);
  Pipe pipe{fds[0], fds[1], capacity > 0 ? static_cast<std::size_t>(capacity) : kPage};
  held_bytes_ += pipe.capacity;
  return pipe;
#else
  return {};
#endif
}

void PipePool::release(Pipe pipe) {
  if (pipe.read_fd < 0) {
    return;
  }
  if (free_.empty() || kept_bytes_ + pipe.capacity <= sizes_.keep_bytes) {
    kept_bytes_ += pipe.capacity;
    free_.push_back(pipe);
  } else {
    discard(pipe);
  }
}

void PipePool::discard(Pipe pipe) {
  if (pipe.read_fd < 0) {
    return;
  }
  held_bytes_ -= pipe.capacity;
  close_pipe(pipe);
}

void PipePool::close_pipe(Pipe pipe) {
  ::close(pipe.read_fd);
  ::close(pipe.write_fd);
}

}  // namespace sandgate::relay
