// The unix-socket supervisor. See unix_connect_guard.hpp.
#include "sandbox-profile/linux/unix_connect_guard.hpp"

#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/openat2.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <poll.h>
#include <seccomp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include "sandbox-profile/process/unique_fd.hpp"

namespace sandgate::sandbox {
namespace {

constexpr std::size_t kMaxDatagram = 256 * 1024;  // above any unix or UDP datagram the kernel takes
// Calls are made on a pool of threads kept between calls (making a thread per call cost about 20
// µs of the ~100 µs a connect inside `run` took: bench/results/2026-11-27/README.md). At most
// this many at once (a blocking connect to a busy listener holds one); more calls wait their turn.
constexpr int kMaxCallThreads = 64;
// How often a connect that would block looks whether its caller still waits for it.
constexpr std::chrono::milliseconds kConnectSlice{100};
// A pool thread with nothing to do for this long ends; the next call makes one again.
constexpr std::chrono::seconds kIdleThreadLifetime{10};
// The sendto() flags the supervisor passes on: an allow-list. Left out: MSG_ZEROCOPY (the kernel
// would send the pages of `run`'s copy of the data, reused after the call, and report completion
// to the caller, who never lent them) and everything else whose effect depends on who calls.
constexpr int kAllowedSendFlags = MSG_DONTWAIT | MSG_NOSIGNAL | MSG_EOR | MSG_OOB | MSG_MORE |
                                  MSG_CONFIRM | MSG_DONTROUTE | MSG_FASTOPEN;

// One notified call, copied out of the kernel's message.
struct Call {
  std::uint64_t id = 0;
  pid_t pid = 0;
  int nr = 0;
  std::uint64_t args[6] = {};
};

// What the supervisor answers: the call's return value, or an errno.
struct Answer {
  long value = 0;
  int error = 0;  // positive errno; 0: success
};

Answer fail(int error) { return {-1, error}; }

bool read_memory(pid_t pid, std::uint64_t address, void* out, std::size_t size) {
  iovec local{out, size};
  iovec remote{reinterpret_cast<void*>(address), size};
  return ::process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size);
}

// The unix path `path`, opened (O_PATH) as the caller `pid` would find it: in its root, from its
// working folder. The error is the errno the caller would have seen.
int open_in_callers_view(pid_t pid, const std::string& path, int& error) {
  const std::string proc = "/proc/" + std::to_string(pid);
  UniqueFd root(::open((proc + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) {
    error = EACCES;
    return -1;
  }
  std::string absolute = path;
  if (path.front() != '/') {
    // The working folder's path in the caller's view, checked to name the caller's folder.
    char buffer[PATH_MAX] = {};
    const ssize_t length = ::readlink((proc + "/cwd").c_str(), buffer, sizeof buffer - 1);
    UniqueFd cwd(::open((proc + "/cwd").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (length <= 0 || buffer[0] != '/' || cwd.get() < 0) {
      error = EACCES;
      return -1;
    }
    open_how how{};
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    UniqueFd named(static_cast<int>(::syscall(SYS_openat2, root.get(), buffer, &how, sizeof how)));
    struct stat a {
    }, b{};
    if (named.get() < 0 || ::fstat(named.get(), &a) != 0 || ::fstat(cwd.get(), &b) != 0 ||
        a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
      error = EACCES;
      return -1;
    }
    absolute = std::string(buffer, static_cast<std::size_t>(length)) + "/" + path;
  }
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  const int fd =
      static_cast<int>(::syscall(SYS_openat2, root.get(), absolute.c_str(), &how, sizeof how));
  error = fd < 0 ? errno : 0;
  return fd;
}

// A pidfd for the calling thread `tid` (the notification names the thread, not its process):
// PIDFD_THREAD on 6.9+, else the thread group's leader (whose descriptor table the thread
// shares).
int pidfd_for_thread(pid_t tid) {
  constexpr unsigned kPidfdThread = O_EXCL;  // PIDFD_THREAD
  const long fd = ::syscall(SYS_pidfd_open, tid, kPidfdThread);
  if (fd >= 0 || errno != EINVAL) {
    return static_cast<int>(fd);
  }
  std::ifstream status("/proc/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Tgid:", 0) == 0) {
      return static_cast<int>(::syscall(SYS_pidfd_open, std::atoi(line.c_str() + 5), 0));
    }
  }
  errno = ESRCH;
  return -1;
}

}  // namespace

std::set<std::pair<std::uint32_t, std::uint32_t>> bound_unix_socket_inodes(int diag) {
  std::set<std::pair<std::uint32_t, std::uint32_t>> out;
  UniqueFd own(diag < 0 ? ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG) : -1);
  const int fd = diag < 0 ? own.get() : diag;
  if (fd < 0) {
    return out;
  }
  // Each dump has a number of its own: replies left over from a dump given up are skipped.
  static std::atomic<std::uint32_t> next_sequence{1};
  const std::uint32_t sequence = next_sequence.fetch_add(1);
  struct {
    nlmsghdr header;
    unix_diag_req request;
  } message{};
  message.header.nlmsg_len = sizeof message;
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  message.header.nlmsg_seq = sequence;
  message.request.sdiag_family = AF_UNIX;
  message.request.udiag_states = ~0U;
  message.request.udiag_show = UDIAG_SHOW_VFS;
  if (::send(fd, &message, sizeof message, 0) != static_cast<ssize_t>(sizeof message)) {
    return out;
  }
  std::vector<char> buffer(64 * 1024);
  for (;;) {
    const ssize_t got = ::recv(fd, buffer.data(), buffer.size(), 0);
    if (got <= 0) {
      return out;
    }
    auto* header = reinterpret_cast<nlmsghdr*>(buffer.data());
    int left = static_cast<int>(got);
    for (; NLMSG_OK(header, left); header = NLMSG_NEXT(header, left)) {
      if (header->nlmsg_seq != sequence) {
        continue;
      }
      if (header->nlmsg_type == NLMSG_DONE || header->nlmsg_type == NLMSG_ERROR) {
        return out;
      }
      auto* reply = static_cast<unix_diag_msg*>(NLMSG_DATA(header));
      int attributes = static_cast<int>(header->nlmsg_len - NLMSG_LENGTH(sizeof *reply));
      for (auto* attribute = reinterpret_cast<rtattr*>(reply + 1); RTA_OK(attribute, attributes);
           attribute = RTA_NEXT(attribute, attributes)) {
        if (attribute->rta_type == UNIX_DIAG_VFS &&
            RTA_PAYLOAD(attribute) >= sizeof(unix_diag_vfs)) {
          // The kernel's own device number (major << 20 | minor), in stat()'s encoding.
          const auto* vfs = static_cast<const unix_diag_vfs*>(RTA_DATA(attribute));
          const dev_t device = makedev(vfs->udiag_vfs_dev >> 20, vfs->udiag_vfs_dev & 0xfffff);
          out.emplace(static_cast<std::uint32_t>(device), vfs->udiag_vfs_ino);
        }
      }
    }
  }
}

struct UnixConnectGuard::State {
  int notify_fd = -1;
  int diag_fd = -1;
  std::mutex diag_mutex;  // one dump at a time on diag_fd
  int stop_pipe[2] = {-1, -1};
  std::vector<std::string> allowed;

  // The calls waiting for a pool thread, and the pool's counts. Guarded by pool_mutex.
  std::mutex pool_mutex;
  std::condition_variable pool_wakeup;
  std::deque<Call> waiting;
  int threads = 0;
  int idle_threads = 0;
  bool stopping = false;

  ~State() {
    for (int fd : {notify_fd, diag_fd, stop_pipe[0], stop_pipe[1]}) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
  }

  // Whether the socket inode `info` (a host socket) is one the user listed.
  bool listed(const struct stat& info) const {
    for (const auto& path : allowed) {
      struct stat other {};
      if (::stat(path.c_str(), &other) == 0 && other.st_dev == info.st_dev &&
          other.st_ino == info.st_ino) {
        return true;
      }
    }
    return false;
  }

  // Judges the unix path in `address` and rewrites it to name the judged inode
  // (/proc/self/fd/N, N kept open in `judged`). The error is the caller's errno.
  int judge_path(pid_t pid, sockaddr_un& address, socklen_t& length, UniqueFd& judged) {
    const std::size_t room = length - offsetof(sockaddr_un, sun_path);
    const std::string path(address.sun_path, ::strnlen(address.sun_path, room));
    int error = 0;
    judged.reset(open_in_callers_view(pid, path, error));
    if (judged.get() < 0) {
      return error;
    }
    struct stat info {};
    if (::fstat(judged.get(), &info) != 0 || !S_ISSOCK(info.st_mode)) {
      return ECONNREFUSED;  // what connect() says of a path that is not a socket
    }
    const std::pair<std::uint32_t, std::uint32_t> key{static_cast<std::uint32_t>(info.st_dev),
                                                      static_cast<std::uint32_t>(info.st_ino)};
    if (!listed(info)) {
      std::lock_guard lock(diag_mutex);
      if (!bound_unix_socket_inodes(diag_fd).contains(key)) {
        return ECONNREFUSED;  // not the confinement's own socket, and not listed
      }
    }
    std::memset(address.sun_path, 0, sizeof address.sun_path);
    const std::string alias = "/proc/self/fd/" + std::to_string(judged.get());
    std::memcpy(address.sun_path, alias.c_str(), alias.size());
    length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + alias.size() + 1);
    return 0;
  }

  // Makes the caller's connect() or sendto() on its own socket, after judging where it goes.
  Answer make(const Call& call) {
    const bool is_connect = call.nr == SCMP_SYS(connect);
    const std::uint64_t address_at = is_connect ? call.args[1] : call.args[4];
    auto length = static_cast<socklen_t>(is_connect ? call.args[2] : call.args[5]);
    sockaddr_storage storage{};
    if (length < sizeof(sa_family_t) || length > sizeof storage) {
      return fail(EINVAL);
    }
    if (!read_memory(call.pid, address_at, &storage, length)) {
      return fail(errno == EFAULT ? EFAULT : EACCES);
    }
    std::vector<char> data;
    if (!is_connect) {
      if (call.args[2] > kMaxDatagram) {
        return fail(EMSGSIZE);
      }
      data.resize(call.args[2]);
      if (!data.empty() && !read_memory(call.pid, call.args[1], data.data(), data.size())) {
        return fail(errno == EFAULT ? EFAULT : EACCES);
      }
    }
    // From here on the caller is known to be the one that made the call (not a recycled pid).
    if (seccomp_notify_id_valid(notify_fd, call.id) != 0) {
      return fail(EINTR);
    }
    UniqueFd pidfd(pidfd_for_thread(call.pid));
    UniqueFd socket(pidfd.get() < 0
                        ? -1
                        : static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(),
                                                     static_cast<int>(call.args[0]), 0)));
    if (socket.get() < 0) {
      return fail(errno == EBADF ? EBADF : EACCES);
    }
    int family = 0;
    socklen_t size = sizeof family;
    if (::getsockopt(socket.get(), SOL_SOCKET, SO_DOMAIN, &family, &size) != 0) {
      return fail(ENOTSOCK);
    }
    const int send_flags = static_cast<int>(call.args[3]);
    if (!is_connect && (send_flags & ~kAllowedSendFlags) != 0) {
      return fail(EOPNOTSUPP);  // MSG_ZEROCOPY would send `run`'s memory, not the caller's
    }
    UniqueFd judged;
    auto* address = reinterpret_cast<sockaddr*>(&storage);
    switch (family) {
      case AF_UNIX:
        if (address->sa_family == AF_UNIX && length > offsetof(sockaddr_un, sun_path) &&
            reinterpret_cast<sockaddr_un*>(&storage)->sun_path[0] != '\0') {
          if (int error =
                  judge_path(call.pid, *reinterpret_cast<sockaddr_un*>(&storage), length, judged);
              error != 0) {
            return fail(error);
          }
        }
        break;
      case AF_INET:
      case AF_INET6:
        break;  // no capability is asked on these calls: the sandbox's network namespace fences
      case AF_NETLINK:
        if (int error = judge_netlink(socket.get(), is_connect, storage, length, data);
            error != 0) {
          return fail(error);
        }
        if (!is_connect) {
          // Sent without the address: the kernel then asks the socket's own capabilities (the
          // caller's), not only those of the sender (`run`, owner of the user namespace).
          address = nullptr;
          length = 0;
        }
        break;
      default:
        return fail(EAFNOSUPPORT);  // the filter lets no other family be made
    }
    if (is_connect) {
      return connect_for(call, socket.get(), family, address, length);
    }
    return send_for(call, socket.get(), data, send_flags, address, length);
  }

  // A netlink connect() or addressed sendto() (of `data`) on the caller's socket `fd`, judged so
  // that `run` lends it no capability. The kernel checks a netlink request against the
  // capabilities of the process that sends it when the sender names the destination
  // (NETLINK_SKB_DST), and `run` holds every capability in the sandbox's user namespace: made as
  // asked, an addressed request would delete the capture's nftables table or make interfaces.
  // And the kernel handles a request in its sender's context: a process id or descriptor number
  // in it (NETNSA_PID, IFLA_NET_NS_FD) would name one of `run`'s. So only this is made:
  //   - a connect() without multicast groups (it only sets the default destination);
  //   - a sendto() to the kernel (port 0, no groups) on a routing socket not connected elsewhere,
  //     of dump requests only (RTM_GET* with NLM_F_DUMP: what the C library's getifaddrs() and
  //     if_nameindex() and Go's net.Interfaces() send with an address), sent without the address
  //     (the same destination; the kernel then asks the socket's opener, the caller, too).
  // Anything else answers EPERM, as the kernel answers a process without CAP_NET_ADMIN (the same
  // request sent without an address, with send(), is the caller's own and not supervised). 0
  // when it may be made.
  static int judge_netlink(int fd, bool is_connect, const sockaddr_storage& storage,
                           socklen_t length, const std::vector<char>& data) {
    const auto& address = reinterpret_cast<const sockaddr_nl&>(storage);
    if (is_connect) {
      if (address.nl_family == AF_UNSPEC) {
        return 0;  // a disconnect
      }
      if (length < sizeof(sockaddr_nl) || address.nl_family != AF_NETLINK) {
        return EINVAL;
      }
      return address.nl_groups == 0 ? 0 : EPERM;
    }
    if (length < sizeof(sockaddr_nl) || address.nl_family != AF_NETLINK) {
      return EINVAL;  // the kernel's answer to a netlink sendto() with another address
    }
    if (address.nl_pid != 0 || address.nl_groups != 0) {
      return EPERM;
    }
    int protocol = -1;
    socklen_t protocol_size = sizeof protocol;
    sockaddr_nl peer{};
    socklen_t size = sizeof peer;
    if (::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &protocol_size) != 0 ||
        protocol != NETLINK_ROUTE ||
        ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &size) != 0 || peer.nl_pid != 0 ||
        peer.nl_groups != 0) {
      return EPERM;  // another protocol, or connected elsewhere (not to the kernel without it)
    }
    return only_route_dumps(data) ? 0 : EPERM;
  }

  // Whether `data` is one or more whole netlink messages, each an RTM_GET* dump request.
  static bool only_route_dumps(const std::vector<char>& data) {
    std::size_t at = 0;
    while (at < data.size()) {
      nlmsghdr header{};
      if (data.size() - at < sizeof header) {
        return false;
      }
      std::memcpy(&header, data.data() + at, sizeof header);
      const bool get = header.nlmsg_type >= RTM_BASE && header.nlmsg_type < RTM_MAX &&
                       (header.nlmsg_type & 3) == (RTM_GETLINK & 3);
      if (header.nlmsg_len < sizeof header || header.nlmsg_len > data.size() - at || !get ||
          (header.nlmsg_flags & NLM_F_DUMP) != NLM_F_DUMP) {
        return false;
      }
      at += NLMSG_ALIGN(header.nlmsg_len);
    }
    return at > 0;
  }

  // The call is made as the kernel would make it for the caller, but without holding a pool
  // thread for as long as it would block the caller: a command must not be able to tie up the
  // pool with calls nobody waits for any more. A call that would block (a blocking socket, no
  // MSG_DONTWAIT) is made without blocking and waited for in slices, for as long as the caller
  // still waits (it is not killed or interrupted) and within the socket's SO_SNDTIMEO, which
  // bounds a blocking connect() and sendto() in the kernel too; the answer at that deadline is
  // the kernel's (EAGAIN; EINPROGRESS for a connect still in progress on another family).

  // How long a call on `fd` may block, by its SO_SNDTIMEO; nothing: without end.
  static std::optional<std::chrono::steady_clock::time_point> send_deadline(int fd) {
    timeval timeout{};
    socklen_t size = sizeof timeout;
    if (::getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, &size) != 0 ||
        (timeout.tv_sec == 0 && timeout.tv_usec == 0)) {
      return std::nullopt;
    }
    return std::chrono::steady_clock::now() + std::chrono::seconds(timeout.tv_sec) +
           std::chrono::microseconds(timeout.tv_usec);
  }

  // Waits a little before trying again (1 ms, doubling up to a slice); false when the caller no
  // longer waits or the deadline has passed.
  bool pause_before_retry(
      const Call& call, std::chrono::milliseconds& pause,
      const std::optional<std::chrono::steady_clock::time_point>& deadline) const {
    if (!caller_waits(call) || (deadline && std::chrono::steady_clock::now() >= *deadline)) {
      return false;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, kConnectSlice);
    return true;
  }

  // connect() on the caller's socket `fd` (a copy of its descriptor), of family `family`. A
  // blocking stream socket is made non-blocking for the call (the caller is stopped in it
  // meanwhile; its flags are put back before the answer): a full unix backlog answers EAGAIN and
  // is tried again shortly; a connect in progress (EINPROGRESS, EALREADY) is polled. A datagram
  // socket's connect never blocks and is made as it is.
  Answer connect_for(const Call& call, int fd, int family, const sockaddr* address,
                     socklen_t length) const {
    int type = 0;
    socklen_t size = sizeof type;
    ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size);
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || (flags & O_NONBLOCK) != 0 || type == SOCK_DGRAM) {
      const long result = ::connect(fd, address, length);
      return result < 0 ? fail(errno) : Answer{result, 0};
    }
    const auto deadline = send_deadline(fd);
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    Answer answer;
    std::chrono::milliseconds pause{1};
    for (;;) {
      if (::connect(fd, address, length) == 0) {
        answer = {0, 0};
        break;
      }
      const int error = errno;
      if (error == EINPROGRESS || error == EALREADY) {
        answer = finish_connect(call, fd, deadline);
        break;
      }
      // EAGAIN from a unix socket: the listener's backlog is full (elsewhere, as from TCP with
      // no local port left, it is the answer).
      if (error != EAGAIN || family != AF_UNIX || !pause_before_retry(call, pause, deadline)) {
        answer = fail(error == EAGAIN && caller_waits(call) ? EAGAIN
                      : error == EAGAIN                     ? EINTR
                                                            : error);
        break;
      }
    }
    ::fcntl(fd, F_SETFL, flags);
    return answer;
  }

  // A connect in progress: its outcome, polled in slices while the caller waits for it.
  Answer finish_connect(
      const Call& call, int fd,
      const std::optional<std::chrono::steady_clock::time_point>& deadline) const {
    for (;;) {
      pollfd ready{fd, POLLOUT, 0};
      const int n = ::poll(&ready, 1, static_cast<int>(kConnectSlice.count()));
      if (n > 0) {
        int error = 0;
        socklen_t size = sizeof error;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) {
          error = errno;
        }
        return error == 0 ? Answer{0, 0} : fail(error);
      }
      if (n < 0 && errno != EINTR) {
        return fail(errno);
      }
      if (!caller_waits(call)) {
        return fail(EINTR);
      }
      if (deadline && std::chrono::steady_clock::now() >= *deadline) {
        return fail(EINPROGRESS);  // what a blocking connect says when SO_SNDTIMEO runs out
      }
    }
  }

  // sendto() with an address on the caller's socket. Unless the caller made it non-blocking (the
  // socket's flag, or MSG_DONTWAIT), a full receiver is waited for as above, with MSG_DONTWAIT
  // on each try (no flag of the socket's is changed).
  Answer send_for(const Call& call, int fd, const std::vector<char>& data, int flags,
                  const sockaddr* address, socklen_t length) const {
    const int file_flags = ::fcntl(fd, F_GETFL);
    const bool caller_blocks =
        file_flags >= 0 && (file_flags & O_NONBLOCK) == 0 && (flags & MSG_DONTWAIT) == 0;
    const auto deadline = caller_blocks ? send_deadline(fd) : std::nullopt;
    std::chrono::milliseconds pause{1};
    for (;;) {
      const long result = ::sendto(fd, data.data(), data.size(),
                                   flags | MSG_NOSIGNAL | MSG_DONTWAIT, address, length);
      if (result >= 0) {
        return {result, 0};
      }
      const int error = errno;
      if ((error != EAGAIN && error != EWOULDBLOCK) || !caller_blocks) {
        return fail(error);
      }
      if (!pause_before_retry(call, pause, deadline)) {
        return fail(caller_waits(call) ? EAGAIN : EINTR);
      }
    }
  }

  // Whether the caller is still stopped in the call (not killed, not interrupted).
  bool caller_waits(const Call& call) const {
    return seccomp_notify_id_valid(notify_fd, call.id) == 0;
  }

  void answer(const Call& call, const Answer& answer) const {
    seccomp_notif* request = nullptr;
    seccomp_notif_resp* response = nullptr;
    if (seccomp_notify_alloc(&request, &response) != 0) {
      return;
    }
    response->id = call.id;
    response->val = answer.value;
    response->error = -answer.error;
    response->flags = 0;
    seccomp_notify_respond(notify_fd, response);  // fails if the caller is gone: nothing to do
    seccomp_notify_free(request, response);
  }
};

namespace {

// A pool thread: makes the waiting calls one after the other; ends when the guard stops or
// after kIdleThreadLifetime without a call.
void serve_calls(std::shared_ptr<UnixConnectGuard::State> state) {
  std::unique_lock lock(state->pool_mutex);
  for (;;) {
    ++state->idle_threads;
    const bool woken = state->pool_wakeup.wait_for(
        lock, kIdleThreadLifetime, [&] { return state->stopping || !state->waiting.empty(); });
    --state->idle_threads;
    if (!woken || state->waiting.empty()) {
      break;  // idle too long, or stopping with nothing left
    }
    const Call call = state->waiting.front();
    state->waiting.pop_front();
    lock.unlock();
    state->answer(call, state->make(call));
    lock.lock();
  }
  --state->threads;
}

// Hands `call` to an idle pool thread, or to a new one while there are fewer than the maximum;
// else it waits for the next thread free. A call is never made on the supervisor's own thread,
// which must keep taking notifications.
void hand_to_pool(const std::shared_ptr<UnixConnectGuard::State>& state, const Call& call) {
  std::unique_lock lock(state->pool_mutex);
  state->waiting.push_back(call);
  if (state->idle_threads >= static_cast<int>(state->waiting.size()) ||
      state->threads >= kMaxCallThreads) {
    state->pool_wakeup.notify_one();
    return;
  }
  ++state->threads;
  lock.unlock();
  try {
    std::thread(serve_calls, state).detach();
  } catch (const std::system_error&) {
    // No thread to be had now: the call waits for one of the pool's, or, when the pool has none,
    // is made here (holding up the notifications for that long, but never lost).
    lock.lock();
    --state->threads;
    if (state->threads > 0) {
      state->pool_wakeup.notify_one();
      return;
    }
    const Call last = state->waiting.back();
    state->waiting.pop_back();
    lock.unlock();
    state->answer(last, state->make(last));
  }
}

// The next notification; false when there is none to take (the caller died meanwhile, EINTR).
// The kernel wants a zeroed buffer for each one: a fresh one from libseccomp's allocator.
bool receive(int notify_fd, Call& call) {
  seccomp_notif* request = nullptr;
  seccomp_notif_resp* response = nullptr;
  if (seccomp_notify_alloc(&request, &response) != 0) {
    return false;
  }
  const bool received = seccomp_notify_receive(notify_fd, request) == 0;
  if (received) {
    call.id = request->id;
    call.pid = static_cast<pid_t>(request->pid);
    call.nr = request->data.nr;
    std::memcpy(call.args, request->data.args, sizeof call.args);
  }
  seccomp_notify_free(request, response);
  return received;
}

void guard_until_stopped(std::shared_ptr<UnixConnectGuard::State> state) {
  for (;;) {
    pollfd fds[2] = {{state->notify_fd, POLLIN, 0}, {state->stop_pipe[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    if ((fds[1].revents & POLLIN) != 0 || (fds[0].revents & (POLLHUP | POLLERR)) != 0) {
      break;  // stop(), or every process that could call is gone
    }
    if ((fds[0].revents & POLLIN) == 0) {
      continue;
    }
    Call call;
    if (!receive(state->notify_fd, call)) {
      continue;
    }
    // A call may block (a blocking connect to a busy listener): calls are made on the pool's
    // threads, so one does not hold up the others or the supervisor.
    hand_to_pool(state, call);
  }
  std::lock_guard lock(state->pool_mutex);
  state->stopping = true;
  state->pool_wakeup.notify_all();
}

}  // namespace

UnixConnectGuard::UnixConnectGuard(int notify_fd, int diag_fd, std::vector<std::string> allowed)
    : state_(std::make_shared<State>()) {
  state_->notify_fd = notify_fd;
  state_->diag_fd = diag_fd;
  state_->allowed = std::move(allowed);
  if (::pipe2(state_->stop_pipe, O_CLOEXEC) != 0) {
    state_->stop_pipe[0] = state_->stop_pipe[1] = -1;
  }
  thread_ = std::thread(guard_until_stopped, state_);
}

UnixConnectGuard::~UnixConnectGuard() { stop(); }

void UnixConnectGuard::stop() {
  if (!thread_.joinable()) {
    return;
  }
  const char stop = 1;
  ssize_t ignored = ::write(state_->stop_pipe[1], &stop, 1);
  (void)ignored;
  thread_.join();
}

}  // namespace sandgate::sandbox
