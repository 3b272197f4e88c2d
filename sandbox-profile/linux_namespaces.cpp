// Linux namespaces for `sandgate run`. See linux_namespaces.hpp.
#include "sandbox-profile/linux_namespaces.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "sandbox-profile/fd_passing.hpp"
#include "sandbox-profile/landlock.hpp"

namespace sandgate::sandbox {
namespace {

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

bool write_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return ok;
}

constexpr const char* kNoNamespaces =
    "; this system does not let unprivileged users create user namespaces (sysctl "
    "kernel.unprivileged_userns_clone=0 or user.max_user_namespaces=0, AppArmor's "
    "kernel.apparmor_restrict_unprivileged_userns=1, or a container's seccomp filter). "
    "Allow them, or run with --no-isolation to use the proxy variables only (not confined)";

// Maps the caller's uid and gid to themselves: files keep their owners inside, and the command
// has no capabilities once it is executed (it is not root inside unless it was root outside).
Expected<bool, std::string> map_ids(unsigned uid, unsigned gid) {
  // setgroups must be denied before an unprivileged process may write gid_map.
  if (!write_file("/proc/self/setgroups", "deny") && errno != ENOENT) {
    return Unexpected{errno_text("cannot write /proc/self/setgroups") + kNoNamespaces};
  }
  if (!write_file("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1")) {
    return Unexpected{errno_text("cannot write /proc/self/uid_map") + kNoNamespaces};
  }
  if (!write_file("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1")) {
    return Unexpected{errno_text("cannot write /proc/self/gid_map") + kNoNamespaces};
  }
  return true;
}

// A new network namespace has one interface, `lo`, and it is down.
Expected<bool, std::string> bring_loopback_up() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return Unexpected{errno_text("socket for loopback")};
  }
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  bool ok = ::ioctl(fd, SIOCGIFFLAGS, &request) == 0;
  if (ok) {
    request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
    ok = ::ioctl(fd, SIOCSIFFLAGS, &request) == 0;
  }
  const std::string error = ok ? "" : errno_text("cannot bring the loopback interface up");
  ::close(fd);
  if (!ok) {
    return Unexpected{error};
  }
  return true;
}

// Covers each socket with /dev/null in this mount namespace (connect() is then refused). A
// socket that vanished or that this user cannot reach anyway is skipped; any other failure is an
// error: running with a way out left open is worse than not running.
Expected<bool, std::string> hide_sockets(const std::vector<std::string>& sockets,
                                         std::vector<std::string>& hidden) {
  if (sockets.empty()) {
    return true;
  }
  // Nothing mounted here may propagate back to the host's mount namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Unexpected{errno_text("cannot make the mount namespace private")};
  }
  for (const auto& path : sockets) {
    if (::mount("/dev/null", path.c_str(), nullptr, MS_BIND, nullptr) == 0) {
      hidden.push_back(path);
      continue;
    }
    if (errno == ENOENT || errno == EACCES || errno == ENOTDIR) {
      continue;
    }
    return Unexpected{errno_text("cannot hide the unix socket " + path) +
                      " (give --allow-unix-socket " + path + " to leave it reachable)"};
  }
  return true;
}

}  // namespace

std::string NamespaceReport::serialize() const {
  std::ostringstream out;
  out << "landlock " << landlock_abi << " " << landlock_paths << "\n";
  out << "note " << landlock_note << "\n";
  for (const auto& path : hidden) {
    out << "hidden " << path << "\n";
  }
  return out.str();
}

NamespaceReport NamespaceReport::parse(const std::string& text) {
  NamespaceReport report;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (key == "landlock") {
      std::istringstream numbers(value);
      numbers >> report.landlock_abi >> report.landlock_paths;
    } else if (key == "note") {
      report.landlock_note = value;
    } else if (key == "hidden") {
      report.hidden.push_back(value);
    }
  }
  return report;
}

Expected<int, std::string> enter_namespaces(const NamespacePlan& plan, NamespaceReport& report) {
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS) != 0) {
    return Unexpected{errno_text("cannot create user and network namespaces") + kNoNamespaces};
  }
  if (auto mapped = map_ids(plan.uid, plan.gid); !mapped) {
    return Unexpected{mapped.error()};
  }
  if (auto up = bring_loopback_up(); !up) {
    return Unexpected{up.error()};
  }
  if (auto hidden = hide_sockets(plan.hide_sockets, report.hidden); !hidden) {
    return Unexpected{hidden.error()};
  }
  auto listener = open_loopback_listener();
  if (!listener) {
    return Unexpected{"cannot listen inside the namespace: " + listener.error()};
  }
  if (!plan.protected_paths.empty()) {
    if (landlock_abi() == 0) {
      report.landlock_note = "the kernel offers no Landlock";
    } else {
      auto landlock = deny_writes(plan.protected_paths);
      if (!landlock) {
        ::close(*listener);
        return Unexpected{"Landlock: " + landlock.error()};
      }
      report.landlock_abi = landlock->abi;
      report.landlock_paths = landlock->paths;
    }
  }
  return *listener;
}

Expected<bool, std::string> drop_privileges() {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return Unexpected{errno_text("prctl(PR_SET_NO_NEW_PRIVS)")};
  }
  for (int cap = 0; cap <= 63; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
      return Unexpected{errno_text("prctl(PR_CAPBSET_DROP)")};
    }
  }
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capset, &header, data) != 0) {
    return Unexpected{errno_text("capset")};
  }
  return true;
}

}  // namespace sandgate::sandbox
