// The stdin/stdout relay. See relay.hpp.
#include "connect-proxy/relay.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

namespace sandgate::connect_proxy {
namespace {

constexpr std::size_t kBufferSize = 64 * 1024;  // one pipe's worth on Linux

bool is_socket(int fd) {
  struct stat info {};
  return ::fstat(fd, &info) == 0 && S_ISSOCK(info.st_mode);
}

// Makes a pipe or socket non-blocking for the relay and puts its flags back afterwards. The
// flag lives on the open file description, which may be shared with the parent (a shell's
// pipeline), so it must be restored before the descriptor is closed.
class NonBlocking {
 public:
  explicit NonBlocking(int fd) : fd_(fd) {
    struct stat info {};
    if (::fstat(fd, &info) != 0 || !(S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode))) {
      return;
    }
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || (flags & O_NONBLOCK) != 0) {
      return;
    }
    if (::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0) {
      saved_flags_ = flags;
    }
  }
  ~NonBlocking() { restore(); }
  NonBlocking(const NonBlocking&) = delete;
  NonBlocking& operator=(const NonBlocking&) = delete;

  void restore() {
    if (saved_flags_ >= 0) {
      ::fcntl(fd_, F_SETFL, saved_flags_);
      saved_flags_ = -1;
    }
  }

 private:
  int fd_;
  int saved_flags_ = -1;
};

// One direction: bytes read from `from` wait in `buffer` until `to` takes them.
struct Flow {
  int from = -1;
  int to = -1;
  bool to_is_socket = false;
  std::vector<char> buffer = std::vector<char>(kBufferSize);
  std::size_t begin = 0;
  std::size_t end = 0;
  bool source_open = true;  // no EOF or error from `from` yet
  bool finished = false;    // `to` has been half-closed; the direction is over
  std::uint64_t bytes = 0;

  bool empty() const { return begin == end; }
};

enum class ReadOutcome { data, would_block, eof, reset };

ReadOutcome fill(Flow& flow) {
  for (;;) {
    const ssize_t got = ::read(flow.from, flow.buffer.data(), flow.buffer.size());
    if (got > 0) {
      flow.begin = 0;
      flow.end = static_cast<std::size_t>(got);
      return ReadOutcome::data;
    }
    if (got == 0) {
      flow.source_open = false;
      return ReadOutcome::eof;
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return ReadOutcome::would_block;
    }
    flow.source_open = false;
    return ReadOutcome::reset;
  }
}

enum class WriteOutcome { drained, would_block, sink_gone };

WriteOutcome drain(Flow& flow) {
  while (!flow.empty()) {
    const std::size_t size = flow.end - flow.begin;
    const ssize_t put = flow.to_is_socket
                            ? ::send(flow.to, flow.buffer.data() + flow.begin, size, kSendFlags)
                            : ::write(flow.to, flow.buffer.data() + flow.begin, size);
    if (put > 0) {
      flow.begin += static_cast<std::size_t>(put);
      flow.bytes += static_cast<std::uint64_t>(put);
      continue;
    }
    if (put < 0 && errno == EINTR) {
      continue;
    }
    if (put < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return WriteOutcome::would_block;
    }
    // EPIPE, ECONNRESET, ...: nobody takes these bytes any more, and nothing read later either.
    flow.begin = flow.end = 0;
    flow.source_open = false;
    return WriteOutcome::sink_gone;
  }
  return WriteOutcome::drained;
}

}  // namespace

RelayResult relay(int in_fd, int out_fd, int socket_fd, std::string early_bytes) {
  NonBlocking in_mode(in_fd);
  NonBlocking out_mode(out_fd);
  RelayResult result;

  Flow up;  // stdin -> socket
  up.from = in_fd;
  up.to = socket_fd;
  up.to_is_socket = true;
  Flow down;  // socket -> stdout
  down.from = socket_fd;
  down.to = out_fd;
  down.to_is_socket = is_socket(out_fd);

  // Half-close: the peer learns that this direction is over, the other direction goes on.
  auto finish_up = [&] {
    ::shutdown(socket_fd, SHUT_WR);
    up.finished = true;
  };
  auto finish_down = [&] {
    out_mode.restore();
    if (down.to_is_socket) {
      ::shutdown(out_fd, SHUT_WR);
    }
    ::close(out_fd);
    down.finished = true;
  };
  // A failed socket ends both directions: nothing more can be sent or received through it.
  auto note_reset = [&] {
    if (!result.error) {
      result.error = "the connection through the proxy was reset";
    }
    up.begin = up.end = 0;
    up.source_open = false;
  };

  // The server's first bytes that came with the proxy's 200 go out before anything else.
  if (!early_bytes.empty()) {
    if (early_bytes.size() > down.buffer.size()) {
      down.buffer.resize(early_bytes.size());
    }
    std::memcpy(down.buffer.data(), early_bytes.data(), early_bytes.size());
    down.end = early_bytes.size();
  }

  // Each pass: attempt the flows that are ready, half-close what has ended, then wait.
  std::array<pollfd, 4> fds{};
  bool first_pass = true;
  while (!up.finished || !down.finished) {
    for (Flow* flow : {&up, &down}) {
      const std::size_t slot = flow == &up ? 0 : 2;
      const bool readable = fds[slot].revents != 0;
      const bool writable = fds[slot + 1].revents != 0;
      if (flow->finished) {
        continue;
      }
      if (flow->empty() && flow->source_open && readable) {
        if (fill(*flow) == ReadOutcome::reset && flow == &down) {
          note_reset();  // the socket failed; stdin errors are taken as EOF
        }
      }
      // Write at once after a read: usually there is room, which saves a poll per chunk.
      if (!flow->empty() && (writable || readable || first_pass)) {
        if (drain(*flow) == WriteOutcome::sink_gone && flow == &up) {
          note_reset();  // the tunnel socket refused our bytes
        }
      }
    }
    first_pass = false;
    if (!up.finished && !up.source_open && up.empty()) {
      finish_up();
    }
    if (!down.finished && !down.source_open && down.empty()) {
      finish_down();
    }
    if (up.finished && down.finished) {
      break;
    }

    // Each flow waits either for its sink (bytes pending) or its source (buffer empty).
    fds[0] = {up.finished || !up.empty() || !up.source_open ? -1 : in_fd, POLLIN, 0};
    fds[1] = {up.finished || up.empty() ? -1 : socket_fd, POLLOUT, 0};
    fds[2] = {down.finished || !down.empty() || !down.source_open ? -1 : socket_fd, POLLIN, 0};
    fds[3] = {down.finished || down.empty() ? -1 : out_fd, POLLOUT, 0};
    int ready = 0;
    do {
      ready = ::poll(fds.data(), fds.size(), -1);
    } while (ready < 0 && errno == EINTR);
    if (ready < 0) {
      result.error = std::string("poll failed: ") + std::strerror(errno);
      break;
    }
  }
  result.bytes_up = up.bytes;
  result.bytes_down = down.bytes;
  return result;
}

}  // namespace sandgate::connect_proxy
