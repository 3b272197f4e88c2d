// Linux namespaces for `sandgate run`. See linux_namespaces.hpp.
#include "sandbox-profile/linux/linux_namespaces.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "sandbox-profile/linux/landlock.hpp"
#include "sandbox-profile/linux/private_view.hpp"
#include "sandbox-profile/process/fd_passing.hpp"
#include "sandbox-profile/process/run_support.hpp"

namespace sandgate::sandbox {
namespace {

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

// The limits of the user namespace this process made (it holds CAP_SYS_RESOURCE there): a new
// user namespace starts with none of its own (only its parents' count).
Expected<bool, std::string> set_user_limits(
    const std::vector<std::pair<std::string, long>>& limits) {
  for (const auto& [name, value] : limits) {
    if (!write_file("/proc/sys/user/" + name, std::to_string(value))) {
      return Unexpected{errno_text("cannot limit /proc/sys/user/" + name + " to " +
                                   std::to_string(value) + " in the sandbox's user namespace")};
    }
  }
  return true;
}

// The kernel's rlimits counted per user namespace (its ucounts: include/linux/user_namespace.h).
// RLIMIT_NPROC also stops a fork bomb: 4096 at most, generous for parallel builds (uid 0 is exempt
// from it in the kernel's check).
Expected<bool, std::string> cap_user_rlimits() {
  for (const auto& limit : kUserRlimits) {
    rlimit user{};
    if (::getrlimit(limit.resource, &user) != 0) {
      return Unexpected{errno_text(std::string("getrlimit(") + limit.name + ")")};
    }
    const rlim_t share = std::min(command_share(user.rlim_cur, limit.ceiling), user.rlim_max);
    const rlimit command{share, share};
    if (::setrlimit(limit.resource, &command) != 0) {
      return Unexpected{errno_text(std::string("cannot limit ") + limit.name + " to " +
                                   std::to_string(share) + " in the sandbox")};
    }
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

}  // namespace

const UserRlimit kUserRlimits[4] = {
    {RLIMIT_SIGPENDING, "RLIMIT_SIGPENDING", RLIM_INFINITY},
    {RLIMIT_MSGQUEUE, "RLIMIT_MSGQUEUE", RLIM_INFINITY},
    {RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK", RLIM_INFINITY},
    {RLIMIT_NPROC, "RLIMIT_NPROC", 4096},
};

namespace {

// The files under /proc/sys that show the initial user namespace's value of a /proc/sys/user
// limit, whatever namespace reads them (the kernel points both at init_user_ns.ucount_max).
constexpr std::pair<const char*, const char*> kTopLevelUserLimits[] = {
    {"max_inotify_instances", "fs/inotify/max_user_instances"},
    {"max_inotify_watches", "fs/inotify/max_user_watches"},
    {"max_fanotify_groups", "fs/fanotify/max_user_groups"},
    {"max_fanotify_marks", "fs/fanotify/max_user_marks"},
};

// The number a /proc/sys file holds, if it holds one.
std::optional<long> read_number(const std::filesystem::path& path) {
  long value = 0;
  if (!(std::ifstream(path) >> value)) {
    return std::nullopt;
  }
  return value;
}

// The caller's limit `name` (a /proc/sys/user file): the smaller of its own level's value and
// the top level's, where the kernel shows that.
std::optional<long> callers_user_limit(const std::filesystem::path& proc_sys,
                                       const std::string& name) {
  std::optional<long> limit = read_number(proc_sys / "user" / name);
  if (!limit) {
    return std::nullopt;
  }
  for (const auto& [user_name, top_level] : kTopLevelUserLimits) {
    if (name == user_name) {
      if (const auto top = read_number(proc_sys / top_level); top && *top >= 0) {
        limit = std::min(*limit, *top);
      }
    }
  }
  return limit;
}

}  // namespace

std::vector<std::pair<std::string, long>> sandbox_user_limits(const std::string& proc_sys) {
  std::vector<std::pair<std::string, long>> limits;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(std::filesystem::path(proc_sys) / "user", ec), end;
       !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const auto limit = callers_user_limit(proc_sys, name);
    if (!limit) {
      continue;
    }
    const bool namespaces = name.starts_with("max_") && name.ends_with("_namespaces");
    limits.emplace_back(name, namespaces ? 0 : std::max(1L, *limit / 4));
  }
  std::sort(limits.begin(), limits.end());
  return limits;
}

rlim_t command_share(rlim_t user, rlim_t ceiling) {
  if (user == RLIM_INFINITY) {
    return ceiling;
  }
  return std::min(std::max<rlim_t>(1, user / 4), ceiling);
}

std::string NamespaceReport::serialize() const {
  std::ostringstream out;
  out << "landlock " << landlock_abi << " " << landlock_paths << " " << (landlock_scoped ? 1 : 0)
      << "\n";
  out << "note " << landlock_note << "\n";
  for (const auto& path : hidden) {
    out << "hidden " << path << "\n";
  }
  for (const auto& watched : reads.watched) {
    out << "watched " << watched.wd << " " << (watched.folder ? 'D' : 'F') << " " << watched.path
        << "\n";
  }
  // A path with a newline is left out: a store not said to be settled stays on the watch that
  // stops the run.
  for (const auto& [key, paths] :
       {std::pair{"frozen", &frozen.folders}, std::pair{"left", &frozen.left},
        std::pair{"settled", &frozen.settled}}) {
    for (const auto& path : *paths) {
      if (path.find('\n') == std::string::npos) {
        out << key << " " << path << "\n";
      }
    }
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
      int scoped = 0;
      numbers >> report.landlock_abi >> report.landlock_paths >> scoped;
      report.landlock_scoped = scoped != 0;
    } else if (key == "note") {
      report.landlock_note = value;
    } else if (key == "hidden") {
      report.hidden.push_back(value);
    } else if (key == "frozen") {
      report.frozen.folders.push_back(value);
    } else if (key == "left") {
      report.frozen.left.push_back(value);
    } else if (key == "settled") {
      report.frozen.settled.push_back(value);
    } else if (key == "watched") {
      std::istringstream fields(value);
      StoreReads::Watched watched{};
      char kind = 0;
      fields >> watched.wd >> kind;
      fields.get();  // the space before the path
      std::getline(fields, watched.path);
      watched.folder = kind == 'D';
      if (fields && !watched.path.empty()) {
        report.reads.watched.push_back(std::move(watched));
      }
    }
  }
  return report;
}

// Threads of this process now (0: unknown).
static std::size_t thread_count() {
  std::size_t count = 0;
  std::error_code error;
  for (std::filesystem::directory_iterator it("/proc/self/task", error), end; !error && it != end;
       it.increment(error)) {
    ++count;
  }
  return error ? 0 : count;
}

Expected<pid_t, std::string> clone_confined() {
  // The child of a raw clone() runs no fork handlers: a lock another thread held at the clone
  // (the allocator's, a logger's) stays held in the child for ever. So the clone comes before
  // any thread exists, and this says so loudly instead of hanging now and then.
  if (const std::size_t threads = thread_count(); threads > 1) {
    return Unexpected{"internal error: " + std::to_string(threads) +
                      " threads run at the clone of the confined process; it must be made "
                      "from a single-threaded sandgate"};
  }
  // A raw clone() with fork()'s semantics: glibc's wrapper wants a stack, and unshare() cannot
  // put the caller itself into a new pid namespace.
  constexpr unsigned long kFlags =
      CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | SIGCHLD;
  const long pid = ::syscall(SYS_clone, kFlags, nullptr, nullptr, nullptr, 0);
  if (pid < 0) {
    return Unexpected{errno_text("cannot create user, network, mount, pid and IPC namespaces") +
                      kNoNamespaces};
  }
  return static_cast<pid_t>(pid);
}

Expected<int, std::string> enter_namespaces(const NamespacePlan& plan, NamespaceReport& report) {
  if (auto mapped = map_ids(plan.uid, plan.gid); !mapped) {
    return Unexpected{mapped.error()};
  }
  if (auto limited = set_user_limits(plan.user_limits); !limited) {
    return Unexpected{limited.error()};
  }
  if (auto capped = cap_user_rlimits(); !capped) {
    return Unexpected{capped.error()};
  }
  if (auto up = bring_loopback_up(); !up) {
    return Unexpected{up.error()};
  }
  if (auto view =
          build_private_view(plan.view, report.hidden, report.reads, report.covers, report.frozen);
      !view) {
    return Unexpected{view.error()};
  }
  if (auto proc = mount_fresh_proc(); !proc) {
    return Unexpected{proc.error()};
  }
  auto listener = open_loopback_listener();
  if (!listener) {
    return Unexpected{"cannot listen inside the namespace: " + listener.error()};
  }
  return *listener;
}

Expected<bool, std::string> apply_landlock(const NamespacePlan& plan, NamespaceReport& report) {
  if (!plan.landlock) {
    report.landlock_note = "nothing to protect";
    return true;
  }
  if (landlock_abi() == 0) {
    report.landlock_note = "the kernel offers no Landlock";
    return true;
  }
  // A second mount of a protected path (a bind mount of the home under the working folder)
  // reaches the same files by another path: carve that path out too.
  WritePolicy policy = plan.writes;
  const std::string mountinfo = read_mountinfo();
  for (const auto& path : plan.writes.carved) {
    for (auto& alias : mount_aliases(mountinfo, path)) {
      policy.carved.push_back(std::move(alias));
    }
  }
  auto landlock = restrict_writes(policy);
  if (!landlock) {
    return Unexpected{"Landlock: " + landlock.error()};
  }
  report.landlock_abi = landlock->abi;
  report.landlock_paths = landlock->paths;
  report.landlock_scoped = landlock->scoped;
  return true;
}

Expected<bool, std::string> join_fresh_keyring() {
  constexpr long kJoinSessionKeyring = 1;  // KEYCTL_JOIN_SESSION_KEYRING
  if (::syscall(SYS_keyctl, kJoinSessionKeyring, nullptr) < 0 && errno != ENOSYS) {
    return Unexpected{errno_text("cannot join a new session keyring")};
  }
  return true;
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
