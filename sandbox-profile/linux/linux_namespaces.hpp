// Linux confinement for `sandgate run`, done by the cloned child before the command runs: new
// user, network, mount, pid and IPC namespaces (unprivileged, and also when run as root), with
// loopback as the only interface; the gate's listening socket made there and handed to the
// parent, which serves on it from the host's network namespace. The gate is thus the only way
// out: the child can reach nothing but its own loopback, and the parent dials upstream. The
// child is the pid namespace's first process (its init): host processes are invisible and out
// of reach of its signals, and when it ends every process left inside ends with it.
//
// Every function here but clone_confined() runs in the single-threaded child, between clone()
// and exec().
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <sys/resource.h>
#include <sys/types.h>

#include "rules/expected.hpp"
#include "sandbox-profile/linux/landlock.hpp"
#include "sandbox-profile/linux/private_view.hpp"

namespace sandgate::sandbox {

// What the parent decided before fork().
struct NamespacePlan {
  unsigned uid = 0;  // the caller's ids, mapped to themselves inside
  unsigned gid = 0;
  ViewPlan view;         // private /run, /tmp, ...; sockets hidden; read-only binds
  WritePolicy writes;    // the Landlock write allow-list
  bool landlock = true;  // false: GOOSE_SANDBOX_PROTECT_FILES=false and nothing to protect
  // connect() and addressed sendto() go to `run`'s unix-socket supervisor (false where the
  // supervisor could not read the callers: Yama's ptrace_scope 2 or 3).
  bool supervise_unix_sockets = true;
  // The per-user kernel limits of the sandbox's user namespace, as /proc/sys/user/NAME = value.
  // The kernel counts inotify instances and watches, fanotify groups and marks, and namespaces
  // per user across namespaces, each level within its own limit: a command that takes them all
  // takes them from the user's editors and other runs too.
  std::vector<std::pair<std::string, long>> user_limits;
};

// What the child managed, reported to the parent (one line each, for the start-up message).
struct NamespaceReport {
  int landlock_abi = 0;             // 0: no Landlock
  std::size_t landlock_paths = 0;   // paths protected
  bool landlock_scoped = false;     // abstract sockets and signals scoped (ABI 6)
  std::string landlock_note;        // why not, when not
  std::vector<std::string> hidden;  // sockets covered
  // The watch over the hidden credential stores (private_view.hpp). Its descriptor is sent on
  // its own after the report (confined_init.cpp); the list goes in the report.
  StoreReads reads;
  // The stores' covers as made, for the init to check before the command starts (kept by the
  // init: not in the text sent to `run`).
  std::vector<StoreCover> covers;
  // The folders frozen around the stores, those left writable, and the stores that an outside
  // replacement no longer shows inside (`run` tells its watch, store_watch.hpp).
  FrozenFolders frozen;

  std::string serialize() const;
  static NamespaceReport parse(const std::string& text);
};

// fork() into new user, network, mount, pid and IPC namespaces: returns the child's pid to the
// parent, 0 in the child (which is pid 1 in its namespace); the error says why it failed and
// what to do. Call while single-threaded.
Expected<pid_t, std::string> clone_confined();

// In the cloned child: maps the ids, sets the user namespace's limits (/proc/sys/user) and the
// per-user rlimits (kUserRlimits, soft and hard, to the command's share: raising a hard limit
// needs CAP_SYS_RESOURCE in the host's user namespace, which nothing inside has; every process
// inside inherits them), brings loopback up, builds
// the private view, mounts a fresh /proc and opens the listener (127.0.0.1, port 0). Returns the
// listener. The error is a sentence for the user: what failed and, for the usual causes, why and
// what to do.
Expected<int, std::string> enter_namespaces(const NamespacePlan& plan, NamespaceReport& report);

// The per-user resources the kernel counts per user namespace, each level of them within its own
// limit, and whose limit is an rlimit of the process (not a /proc/sys/user file): pending signals
// (queued with sigqueue, or kept for a timer), POSIX message queue bytes, shared memory locked
// (SHM_LOCK, hugetlb), processes. The command's count is the sandbox's level; the user's other
// programs share the level above with it, up to their own limits.
struct UserRlimit {
  int resource;      // RLIMIT_SIGPENDING, ...
  const char* name;  // for the error
  rlim_t ceiling;    // the command's limit is never above this (RLIM_INFINITY: none)
};
extern const UserRlimit kUserRlimits[4];

// The command's share of the user's limit `user` (its soft limit, the one the kernel checks):
// a quarter, like the /proc/sys/user limits, at least 1, at most `ceiling`; no limit without one.
rlim_t command_share(rlim_t user, rlim_t ceiling);

// The sandbox's per-user kernel limits (NamespacePlan::user_limits), from the caller's, as read
// under `proc_sys` (/proc/sys; a test gives a folder of its own): no namespaces (the
// system-call filter refuses them too), and a quarter of each other limit (inotify instances
// and watches, fanotify groups and marks), so that the user's own programs and other runs keep
// the rest. The caller's limit is the smaller of its user namespace's (user/max_*) and the
// top level's (fs/inotify/max_user_*, fs/fanotify/max_user_*, which every namespace shows as
// the initial one's): `run` started inside a user namespace (rootless podman, toolbox, a CI
// runner) reads its own level as INT_MAX, while the kernel still charges the top level's
// limit. (A level in between, which no file shows, may be lower still.) Limits this kernel does
// not have are left out.
std::vector<std::pair<std::string, long>> sandbox_user_limits(
    const std::string& proc_sys = "/proc/sys");

// In the cloned child, after enter_namespaces and the last mount: the Landlock write
// allow-list of the plan (and the second mounts of protected paths found in this view carved
// out of it). Reports what it did; the error says why it could not.
Expected<bool, std::string> apply_landlock(const NamespacePlan& plan, NamespaceReport& report);

// A new, empty session keyring: the user's session keyring (and what it holds) is out of reach.
Expected<bool, std::string> join_fresh_keyring();

// Last step before exec: no_new_privs, an empty capability bounding set and no capabilities,
// so the command (even as root inside) cannot undo the confinement.
Expected<bool, std::string> drop_privileges();

}  // namespace sandgate::sandbox
