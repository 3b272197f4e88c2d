// A per-worker pool of non-blocking pipes for splice(2), lent to a relay direction only while
// bytes are in flight, so that an idle tunnel (CONNECT or WebSocket) holds no pipe at all.
//
// Pipes are made with a capacity of 256 KiB (F_SETPIPE_SZ; why that size: pipe_pool.cpp), clamped
// to the system's /proc/sys/fs/pipe-max-size; when the kernel refuses (an unprivileged user past
// /proc/sys/fs/pipe-user-pages-soft) the pipe keeps the size it was given and still works. The
// pool keeps at most 4 MiB of empty pipes' capacity for reuse and closes the rest: an empty
// pipe holds no data pages, but its capacity counts against the user's pipe quota, which the
// sandboxed programs of the same user share.
//
// Worker thread only; nothing here is thread-safe.
#pragma once

#include <cstddef>
#include <vector>

namespace sandgate::relay {

class PipePool {
 public:
  struct Pipe {
    int read_fd = -1;
    int write_fd = -1;
    std::size_t capacity = 0;  // bytes the pipe can hold (what F_GETPIPE_SZ said)
  };
  // The gate's sizes (pipe_pool.cpp).
  PipePool();
  // `pipe_bytes`: the capacity asked for each pipe (clamped to pipe-max-size; at least a page).
  // `keep_bytes`: the empty pipes' capacity kept for reuse (at least one pipe is kept).
  PipePool(std::size_t pipe_bytes, std::size_t keep_bytes);
  ~PipePool();
  PipePool(const PipePool&) = delete;
  PipePool& operator=(const PipePool&) = delete;

  // A pipe, or one with read_fd -1 when none can be created (descriptor limit, or not Linux):
  // the caller copies through a buffer instead.
  Pipe acquire();
  // Only an empty pipe may be given back; a pipe with bytes in it must be destroyed.
  void release(Pipe pipe);
  static void destroy(Pipe pipe);

  // The capacity asked for each new pipe, after clamping.
  std::size_t pipe_bytes() const { return pipe_bytes_; }
  // Empty pipes held for reuse now.
  std::size_t kept() const { return free_.size(); }

 private:
  std::vector<Pipe> free_;
  std::size_t pipe_bytes_;
  std::size_t keep_;  // pipes, not bytes
};

// /proc/sys/fs/pipe-max-size, or 1 MiB (the kernel's default) when it cannot be read.
std::size_t pipe_max_size();

}  // namespace sandgate::relay
