// A per-worker pool of non-blocking pipes for splice(2), lent to a relay direction only while
// bytes are in flight, so that an idle tunnel (CONNECT or WebSocket) holds no pipe at all.
//
// Pipes are enlarged (F_SETPIPE_SZ) to 256 KiB (why that size: pipe_pool.cpp), clamped to the
// system's /proc/sys/fs/pipe-max-size, while the capacity of all the pool's pipes together (lent
// and kept) stays within a budget; past it, a new pipe keeps the kernel's default 64 KiB. The
// budget matters because a pipe's capacity counts against its user's pipe quota
// (/proc/sys/fs/pipe-user-pages-soft, 64 MiB by default), which the sandboxed programs of the
// same user share: past that quota the kernel gives the user's new pipes 8 KiB. When the kernel
// refuses to enlarge a pipe it keeps the size it was given and still works. Empty pipes are kept
// for reuse up to a second, smaller budget; the rest are closed.
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
  struct Sizes {
    std::size_t pipe_bytes;  // asked for each pipe (clamped to pipe-max-size; at least a page)
    std::size_t hold_bytes;  // all pipes' capacity together, beyond which none is enlarged
    std::size_t keep_bytes;  // empty pipes' capacity kept for reuse (at least one pipe is kept)
  };
  // The gate's sizes (pipe_pool.cpp).
  PipePool();
  explicit PipePool(Sizes sizes);
  ~PipePool();
  PipePool(const PipePool&) = delete;
  PipePool& operator=(const PipePool&) = delete;

  // A pipe, or one with read_fd -1 when none can be created (descriptor limit, or not Linux):
  // the caller copies through a buffer instead.
  Pipe acquire();
  // Only an empty pipe may be given back; a pipe with bytes in it must be discarded.
  void release(Pipe pipe);
  // Closes a lent pipe (one that may still hold bytes nobody will read).
  void discard(Pipe pipe);

  // The capacity asked for each new pipe, after clamping.
  std::size_t pipe_bytes() const { return sizes_.pipe_bytes; }
  // Empty pipes held for reuse now.
  std::size_t kept() const { return free_.size(); }
  // The capacity of every pipe of this pool, lent or kept.
  std::size_t held_bytes() const { return held_bytes_; }

 private:
  static void close_pipe(Pipe pipe);

  std::vector<Pipe> free_;
  Sizes sizes_;
  std::size_t kept_bytes_ = 0;
  std::size_t held_bytes_ = 0;
};

// /proc/sys/fs/pipe-max-size, or 1 MiB (the kernel's default) when it cannot be read.
std::size_t pipe_max_size();

}  // namespace sandgate::relay
