// The start-up self-probe. See self_probe.hpp.
#include "sandbox-profile/linux/self_probe.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

namespace sandgate::sandbox {
namespace {

std::string tcp_escape(const ProbeTargets& targets) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(targets.tcp_port);
  if (::inet_pton(AF_INET, targets.tcp_host.c_str(), &address.sin_addr) != 1) {
    return "the self-probe's TCP address " + targets.tcp_host + " is not an IPv4 address";
  }
  if (targets.captured) {
    const int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (udp < 0) {
      return {};
    }
    const ssize_t sent =
        ::sendto(udp, "x", 1, 0, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::close(udp);
    if (sent >= 0) {
      return "a UDP datagram to " + targets.tcp_host + ":" + std::to_string(targets.tcp_port) +
             " was sent (the capture's fence does not drop it)";
    }
    return {};
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return {};  // no TCP socket at all: nothing gets out that way
  }
  const int result = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  const int error = errno;
  ::close(fd);  // closed at once: a connection under way is abandoned
  if (result == 0 || error == EINPROGRESS) {
    return "a direct TCP connection to " + targets.tcp_host + ":" +
           std::to_string(targets.tcp_port) +
           " was not refused (the network namespace has a route out)";
  }
  return {};
}

// A unix socket's address for `path`; nothing when the path is too long for one.
std::optional<sockaddr_un> unix_address(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    return std::nullopt;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

std::string unix_escape(const std::string& path) {
  if (path.empty()) {
    return {};
  }
  const auto address = unix_address(path);
  if (!address) {
    return {};
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return {};
  }
  const int result = ::connect(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof *address);
  ::close(fd);
  if (result == 0) {
    return "the host's unix socket " + path +
           ", created after the confinement was set up, "
           "was reachable";
  }
  return {};
}

std::string write_escape(const std::string& path) {
  struct stat info {};
  const bool exists = ::lstat(path.c_str(), &info) == 0;
  if (exists && S_ISDIR(info.st_mode)) {
    const std::string probe = path + "/.sandgate-probe-" + std::to_string(::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::close(fd);
      ::unlink(probe.c_str());
      return "a new file could be created in the protected folder " + path;
    }
    return {};
  }
  if (exists && S_ISREG(info.st_mode)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
      return "the protected file " + path + " could be opened for writing";
    }
    return {};
  }
  if (!exists) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::close(fd);
      ::unlink(path.c_str());
      return "the missing protected file " + path + " could be created";
    }
  }
  return {};  // a link, a socket, a device: opening it proves nothing either way
}

// chmod to the mode the path has: nothing changes if it works, but it must not.
std::string chmod_escape(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 || (!S_ISREG(info.st_mode) && !S_ISDIR(info.st_mode))) {
    return {};
  }
  if (::chmod(path.c_str(), info.st_mode & 07777) == 0) {
    return "the mode of the protected path " + path + " could be changed (chmod)";
  }
  return {};
}

std::string pty_escape(const ProbeTargets& targets) {
  if (targets.host_pty.empty()) {
    return {};
  }
  const int fd = ::open(targets.host_pty.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return {};
  }
  struct stat info {};
  const bool host = ::fstat(fd, &info) == 0 && info.st_dev == targets.host_pty_device;
  ::close(fd);
  return host ? "the host's terminal " + targets.host_pty + " could be opened" : std::string();
}

// An addressed RTM_NEWADDR of 127.0.0.1/8 on lo (index 1): refused for want of CAP_NET_ADMIN
// (EPERM) before the kernel looks at the address, which exists already (EEXIST) if allowed.
std::string netlink_escape(bool probed) {
  if (!probed) {
    return {};
  }
  const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) {
    return {};
  }
  struct {
    nlmsghdr header;
    ifaddrmsg address;
    rtattr local;
    in_addr loopback;
  } request{};
  request.header.nlmsg_len = sizeof request;
  request.header.nlmsg_type = RTM_NEWADDR;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
  request.header.nlmsg_seq = 1;
  request.address.ifa_family = AF_INET;
  request.address.ifa_prefixlen = 8;
  request.address.ifa_index = 1;
  request.local.rta_len = RTA_LENGTH(sizeof request.loopback);
  request.local.rta_type = IFA_LOCAL;
  request.loopback.s_addr = htonl(INADDR_LOOPBACK);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  int error = EPERM;
  if (::sendto(fd, &request, sizeof request, 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) == static_cast<ssize_t>(sizeof request)) {
    struct {
      nlmsghdr header;
      nlmsgerr answer;
    } reply{};
    if (::recv(fd, &reply, sizeof reply, 0) >= static_cast<ssize_t>(sizeof reply) &&
        reply.header.nlmsg_type == NLMSG_ERROR) {
      error = -reply.answer.error;
    }
  }
  ::close(fd);
  if (error != EPERM) {
    return "a netlink request that needs CAP_NET_ADMIN, sent with an address, was not refused "
           "(answer: " +
           std::string(error == 0 ? "done" : std::strerror(error)) + ")";
  }
  return {};
}

// A unix socket bound where the host sees it is a server the user's own tools may trust.
std::string bind_escape(const std::string& folder) {
  if (folder.empty()) {
    return {};
  }
  const std::string path = folder + "/sandgate-probe-bind-" + std::to_string(::getpid()) + ".sock";
  const auto address = unix_address(path);
  if (!address) {
    return {};
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return {};
  }
  const int result = ::bind(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof *address);
  ::close(fd);
  if (result == 0) {
    ::unlink(path.c_str());
    return "a unix socket could be bound in " + folder + ", where the host's programs see it";
  }
  return {};
}

// The kernel's key system calls must not exist inside: request_key() without a callout makes
// no upcall, so asking is harmless, and any answer but ENOSYS means they are reachable.
std::string keyring_escape() {
  const long got = ::syscall(SYS_request_key, "user", "sandgate-probe", nullptr, 0);
  if (got >= 0 || errno != ENOSYS) {
    return "the kernel's key system calls (request_key) are reachable: a key upcall runs a host "
           "helper";
  }
  return {};
}

// A new user namespace would give its creator every capability inside it.
std::string namespace_escape() {
  const pid_t child = ::fork();
  if (child == 0) {
    ::_exit(::unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0 ? 0 : 1);
  }
  int status = 0;
  if (child > 0 && ::waitpid(child, &status, 0) == child && WIFEXITED(status) &&
      WEXITSTATUS(status) == 0) {
    return "a new user and network namespace could be made (unshare)";
  }
  return {};
}

// init holds the channel to `run` and has no filter of its own but the one it shares: tracing
// it, reading its memory or taking its descriptors must all fail.
std::string init_escape(int init_pid) {
  if (init_pid <= 0) {
    return {};
  }
  std::string found;
  // PTRACE_SEIZE, not ATTACH: it stops nothing, and the probe's exit ends the trace.
  if (::ptrace(PTRACE_SEIZE, init_pid, nullptr, nullptr) == 0) {
    found = "the namespace's init could be traced (ptrace)";
  }
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, init_pid, 0));
  if (pidfd >= 0) {
    for (int fd = 0; fd < 16 && found.empty(); ++fd) {
      const int taken = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
      if (taken >= 0) {
        ::close(taken);
        found = "a descriptor of the namespace's init could be taken (pidfd_getfd)";
      }
    }
    ::close(pidfd);
  }
  const std::string mem = "/proc/" + std::to_string(init_pid) + "/mem";
  if (const int fd = ::open(mem.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    ::close(fd);
    found = found.empty() ? "the memory of the namespace's init could be opened" : found;
  }
  return found;
}

}  // namespace

std::vector<std::string> probe_fence(const ProbeTargets& targets) {
  std::vector<std::string> escapes;
  for (auto escape : {tcp_escape(targets), unix_escape(targets.host_socket)}) {
    if (!escape.empty()) {
      escapes.push_back(std::move(escape));
    }
  }
  for (const auto& path : targets.no_write) {
    if (auto escape = write_escape(path); !escape.empty()) {
      escapes.push_back(std::move(escape));
    }
    if (auto escape = chmod_escape(path); !escape.empty()) {
      escapes.push_back(std::move(escape));
    }
  }
  for (auto escape :
       {netlink_escape(targets.netlink), bind_escape(targets.no_socket_folder), pty_escape(targets),
        keyring_escape(), namespace_escape(), init_escape(targets.init_pid)}) {
    if (!escape.empty()) {
      escapes.push_back(std::move(escape));
    }
  }
  return escapes;
}

}  // namespace sandgate::sandbox
