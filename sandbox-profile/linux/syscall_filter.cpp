// The system-call allow-list. See syscall_filter.hpp.
#include "sandbox-profile/linux/syscall_filter.hpp"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

namespace sandgate::sandbox {

const std::vector<std::string_view>& allowed_system_calls() {
  // Grouped by what they are for; Docker's default profile is the reference, less what the
  // header says is left out.
  static const std::vector<std::string_view> kAllowed = {
      // Files and folders.
      "access", "faccessat", "faccessat2", "close", "close_range", "read", "readv", "pread64",
      "preadv", "preadv2", "write", "writev", "pwrite64", "pwritev", "pwritev2", "lseek", "_llseek",
      "stat", "fstat", "lstat", "newfstatat", "statx", "stat64", "fstat64", "lstat64", "fstatat64",
      "statfs", "fstatfs", "statfs64", "fstatfs64", "getdents", "getdents64", "readlink",
      "readlinkat", "mkdir", "mkdirat", "rmdir", "rename", "renameat", "renameat2", "link",
      "linkat", "unlink", "unlinkat", "symlink", "symlinkat", "chown", "fchown", "lchown",
      "fchownat", "truncate", "ftruncate", "truncate64", "ftruncate64", "fallocate", "fadvise64",
      "fadvise64_64", "readahead", "fsync", "fdatasync", "sync", "syncfs", "sync_file_range",
      "flock", "fcntl", "fcntl64", "dup", "dup2", "dup3", "chdir", "fchdir", "getcwd", "umask",
      "utime", "utimes", "utimensat", "futimesat", "copy_file_range", "sendfile", "sendfile64",
      "splice", "tee", "vmsplice", "getxattr", "lgetxattr", "fgetxattr", "setxattr", "lsetxattr",
      "fsetxattr", "listxattr", "llistxattr", "flistxattr", "removexattr", "lremovexattr",
      "fremovexattr", "getxattrat", "setxattrat", "listxattrat", "removexattrat", "file_getattr",
      "file_setattr", "name_to_handle_at", "inotify_init", "inotify_init1", "inotify_add_watch",
      "inotify_rm_watch", "cachestat", "ioctl",
      // Memory.
      "brk", "mmap", "mmap2", "munmap", "mremap", "mprotect", "madvise", "mincore", "msync",
      "mlock", "mlock2", "munlock", "mlockall", "munlockall", "membarrier", "memfd_create",
      "memfd_secret", "remap_file_pages", "pkey_alloc", "pkey_free", "pkey_mprotect",
      "map_shadow_stack", "mseal", "get_mempolicy", "set_mempolicy", "mbind",
      "set_mempolicy_home_node", "process_madvise", "process_mrelease",
      // Processes and threads (clone and unshare: conditions below).
      "fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid", "waitpid",
      "getpid", "getppid", "gettid", "getpgid", "setpgid", "getpgrp", "getsid", "setsid",
      "set_tid_address", "set_robust_list", "get_robust_list", "rseq", "arch_prctl",
      "set_thread_area", "get_thread_area", "prctl", "seccomp", "landlock_create_ruleset",
      "landlock_add_rule", "landlock_restrict_self", "ptrace", "process_vm_readv",
      "process_vm_writev", "kcmp", "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "getrlimit",
      "setrlimit", "prlimit64", "ugetrlimit", "getrusage", "getpriority", "setpriority",
      "ioprio_get", "ioprio_set", "sched_yield", "sched_getaffinity", "sched_setaffinity",
      "sched_getattr", "sched_setattr", "sched_getparam", "sched_setparam", "sched_getscheduler",
      "sched_setscheduler", "sched_get_priority_max", "sched_get_priority_min",
      "sched_rr_get_interval", "sched_rr_get_interval_time64", "getcpu", "capget", "capset",
      "uname", "sysinfo", "times",
      // Identity (inside the user namespace: only the mapped ids exist).
      "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups", "setuid",
      "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid",
      "setgroups", "getuid32", "geteuid32", "getgid32", "getegid32", "getresuid32", "getresgid32",
      "getgroups32", "setuid32", "setgid32", "setreuid32", "setregid32", "setresuid32",
      "setresgid32", "setfsuid32", "setfsgid32", "setgroups32",
      // Signals.
      "kill", "tkill", "tgkill", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending",
      "rt_sigsuspend", "rt_sigtimedwait", "rt_sigtimedwait_time64", "rt_sigqueueinfo",
      "rt_tgsigqueueinfo", "sigaltstack", "signalfd", "signalfd4", "pause", "sigreturn",
      "sigprocmask", "restart_syscall",
      // Time and waiting.
      "clock_gettime", "clock_gettime64", "clock_getres", "clock_getres_time64", "clock_nanosleep",
      "clock_nanosleep_time64", "nanosleep", "gettimeofday", "time", "alarm", "getitimer",
      "setitimer", "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime",
      "timer_gettime64", "timer_settime", "timer_settime64", "timerfd_create", "timerfd_gettime",
      "timerfd_gettime64", "timerfd_settime", "timerfd_settime64", "futex", "futex_time64",
      "futex_waitv", "futex_wake", "futex_wait", "futex_requeue", "poll", "ppoll", "ppoll_time64",
      "select", "_newselect", "pselect6", "pselect6_time64", "epoll_create", "epoll_create1",
      "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "pipe",
      "pipe2", "getrandom",
      // Sockets (socket and socketpair: conditions below).
      "bind", "listen", "accept", "accept4", "connect", "getsockname", "getpeername", "getsockopt",
      "setsockopt", "shutdown", "send", "sendto", "sendmsg", "sendmmsg", "recv", "recvfrom",
      "recvmsg", "recvmmsg", "recvmmsg_time64",
      // SysV and POSIX IPC (the namespace's own).
      "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semtimedop_time64",
      "semctl", "shmget", "shmat", "shmdt", "shmctl", "mq_open", "mq_unlink", "mq_timedsend",
      "mq_timedsend_time64", "mq_timedreceive", "mq_timedreceive_time64", "mq_notify",
      "mq_getsetattr",
      // Asynchronous I/O of the old kind (seen by seccomp, unlike io_uring).
      "io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents",
      "io_pgetevents_time64"};
  return kAllowed;
}

const std::vector<std::string_view>& refused_system_calls() {
  static const std::vector<std::string_view> kRefused = {"add_key",
                                                         "request_key",
                                                         "keyctl",
                                                         "bpf",
                                                         "perf_event_open",
                                                         "userfaultfd",
                                                         "io_uring_setup",
                                                         "io_uring_enter",
                                                         "io_uring_register",
                                                         "kexec_load",
                                                         "kexec_file_load",
                                                         "init_module",
                                                         "finit_module",
                                                         "delete_module",
                                                         "open_by_handle_at",
                                                         "mount",
                                                         "umount",
                                                         "umount2",
                                                         "mount_setattr",
                                                         "fsopen",
                                                         "fsconfig",
                                                         "fsmount",
                                                         "fspick",
                                                         "move_mount",
                                                         "open_tree",
                                                         "open_tree_attr",
                                                         "statmount",
                                                         "listmount",
                                                         "pivot_root",
                                                         "chroot",
                                                         "setns",
                                                         "fanotify_init",
                                                         "fanotify_mark",
                                                         "quotactl",
                                                         "quotactl_fd",
                                                         "swapon",
                                                         "swapoff",
                                                         "reboot",
                                                         "syslog",
                                                         "settimeofday",
                                                         "clock_settime",
                                                         "clock_adjtime",
                                                         "adjtimex",
                                                         "sethostname",
                                                         "setdomainname",
                                                         "acct",
                                                         "lookup_dcookie",
                                                         "iopl",
                                                         "ioperm",
                                                         "vhangup",
                                                         "uselib",
                                                         "ustat",
                                                         "sysfs",
                                                         "_sysctl",
                                                         "nfsservctl",
                                                         "personality",
                                                         "clone",
                                                         "clone3",
                                                         "unshare",
                                                         "socket",
                                                         "socketpair",
                                                         "socketcall",
                                                         "vm86",
                                                         "vm86old",
                                                         "modify_ldt",
                                                         "migrate_pages",
                                                         "move_pages",
                                                         "lsm_set_self_attr"};
  return kRefused;
}

namespace {

using Filter = std::unique_ptr<void, void (*)(scmp_filter_ctx)>;

Unexpected<std::string> failed(const std::string& what, int rc) {
  return Unexpected{what + ": " + std::strerror(-rc)};
}

// socket() and socketpair(): every family below AF_MAX but the allowed ones, and everything from
// AF_MAX up, answers EAFNOSUPPORT. The family is an int: compared on its low 32 bits, as the
// kernel reads it (a value with high bits set must not slip past).
Expected<bool, std::string> add_socket_rules(scmp_filter_ctx filter) {
  constexpr unsigned kFamilies[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
  for (int call : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
    for (unsigned family : kFamilies) {
      if (int rc =
              seccomp_rule_add(filter, SCMP_ACT_ALLOW, call, 1, SCMP_A0_32(SCMP_CMP_EQ, family));
          rc != 0) {
        return failed("seccomp_rule_add(socket)", rc);
      }
    }
    // Every other family: a clearer error than ENOSYS (the call exists; the family does not).
    for (unsigned family = 0; family < AF_MAX; ++family) {
      bool allowed = false;
      for (unsigned ok : kFamilies) {
        allowed = allowed || ok == family;
      }
      if (allowed) {
        continue;
      }
      if (int rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(EAFNOSUPPORT), call, 1,
                                    SCMP_A0_32(SCMP_CMP_EQ, family));
          rc != 0) {
        return failed("seccomp_rule_add(socket)", rc);
      }
    }
    if (int rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(EAFNOSUPPORT), call, 1,
                                  SCMP_A0_32(SCMP_CMP_GE, AF_MAX));
        rc != 0) {
      return failed("seccomp_rule_add(socket)", rc);
    }
  }
  return true;
}

// clone() and unshare() without a namespace flag; with one, EPERM (as a kernel that refuses the
// namespace would answer). clone's flags are its first argument on x86-64 and arm64 alike.
Expected<bool, std::string> add_process_rules(scmp_filter_ctx filter) {
  constexpr scmp_datum_t kNamespaces = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                                       CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP |
                                       0x00000080 /* CLONE_NEWTIME */;
  for (int call : {SCMP_SYS(clone), SCMP_SYS(unshare)}) {
    if (int rc = seccomp_rule_add(filter, SCMP_ACT_ALLOW, call, 1,
                                  SCMP_A0_64(SCMP_CMP_MASKED_EQ, kNamespaces, 0));
        rc != 0) {
      return failed("seccomp_rule_add(clone)", rc);
    }
  }
  // Any namespace bit set, one rule per bit (libseccomp compares masked values for equality).
  for (scmp_datum_t bit = 1; bit != 0; bit <<= 1) {
    if ((kNamespaces & bit) == 0) {
      continue;
    }
    for (int call : {SCMP_SYS(clone), SCMP_SYS(unshare)}) {
      if (int rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), call, 1,
                                    SCMP_A0_64(SCMP_CMP_MASKED_EQ, bit, bit));
          rc != 0 && rc != -EEXIST) {
        return failed("seccomp_rule_add(clone)", rc);
      }
    }
  }
  // The personalities Docker allows: query, PER_LINUX, UNAME26 and ADDR_NO_RANDOMIZE variants.
  for (scmp_datum_t persona : {0x0ULL, 0x8ULL, 0x20000ULL, 0x20008ULL, 0xffffffffULL}) {
    if (int rc = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(personality), 1,
                                  SCMP_A0_64(SCMP_CMP_EQ, persona));
        rc != 0) {
      return failed("seccomp_rule_add(personality)", rc);
    }
  }
  return true;
}

// A file the command makes set-user-ID or set-group-ID stays so on the host, owned by the
// user who ran `run` (root, often): whoever runs it later runs it as them. So no call that sets
// a mode may set S_ISUID or S_ISGID (EPERM): chmod and its kin, and creat, open and openat when
// they create (O_CREAT or O_TMPFILE), mknod and mknodat. openat2, whose mode sits in a struct a
// filter cannot read, is not allowed at all (ENOSYS: callers fall back to openat).
Expected<bool, std::string> add_mode_rules(scmp_filter_ctx filter) {
  constexpr scmp_datum_t kSetId = S_ISUID | S_ISGID;
  constexpr scmp_datum_t kCreates = O_CREAT | __O_TMPFILE;
  struct ModeCall {
    const char* name;
    unsigned mode_arg;
    int flags_arg;  // -1: the call always sets the mode
  };
  constexpr ModeCall kCalls[] = {
      {"chmod", 1, -1},     {"fchmod", 1, -1}, {"fchmodat", 2, -1},
      {"fchmodat2", 2, -1}, {"creat", 1, -1},  {"mknod", 1, -1},
      {"mknodat", 2, -1},   {"open", 2, 1},    {"openat", 3, 2},
  };
  const auto rule = [&](uint32_t action, int call, std::vector<scmp_arg_cmp> conditions) {
    const int rc = seccomp_rule_add_array(
        filter, action, call, static_cast<unsigned>(conditions.size()), conditions.data());
    return rc == 0 || rc == -EEXIST ? 0 : rc;
  };
  for (const ModeCall& c : kCalls) {
    const int call = seccomp_syscall_resolve_name(c.name);
    if (call == __NR_SCMP_ERROR || call < 0) {
      continue;  // not a call of this architecture: ENOSYS
    }
    const scmp_arg_cmp no_set_id = {c.mode_arg, SCMP_CMP_MASKED_EQ, kSetId, 0};
    if (int rc = rule(SCMP_ACT_ALLOW, call, {no_set_id}); rc != 0) {
      return failed(std::string("seccomp_rule_add(") + c.name + ")", rc);
    }
    if (c.flags_arg >= 0) {
      // Not creating: the mode argument is whatever the register held, and means nothing.
      const scmp_arg_cmp opens = {static_cast<unsigned>(c.flags_arg), SCMP_CMP_MASKED_EQ, kCreates,
                                  0};
      if (int rc = rule(SCMP_ACT_ALLOW, call, {opens}); rc != 0) {
        return failed(std::string("seccomp_rule_add(") + c.name + ")", rc);
      }
    }
    for (scmp_datum_t bit : {scmp_datum_t{S_ISUID}, scmp_datum_t{S_ISGID}}) {
      const scmp_arg_cmp sets = {c.mode_arg, SCMP_CMP_MASKED_EQ, bit, bit};
      if (c.flags_arg < 0) {
        if (int rc = rule(SCMP_ACT_ERRNO(EPERM), call, {sets}); rc != 0) {
          return failed(std::string("seccomp_rule_add(") + c.name + ")", rc);
        }
        continue;
      }
      for (scmp_datum_t creates : {scmp_datum_t{O_CREAT}, scmp_datum_t{__O_TMPFILE}}) {
        const scmp_arg_cmp creating = {static_cast<unsigned>(c.flags_arg), SCMP_CMP_MASKED_EQ,
                                       creates, creates};
        if (int rc = rule(SCMP_ACT_ERRNO(EPERM), call, {creating, sets}); rc != 0) {
          return failed(std::string("seccomp_rule_add(") + c.name + ")", rc);
        }
      }
    }
  }
  return true;
}

// connect(), and sendto() with an address, go to the supervisor (unix_connect_guard.hpp);
// sendto() without one (a connected socket) is an ordinary call.
Expected<bool, std::string> add_supervised_rules(scmp_filter_ctx filter) {
  if (int rc = seccomp_rule_add(filter, SCMP_ACT_NOTIFY, SCMP_SYS(connect), 0); rc != 0) {
    return failed("seccomp_rule_add(connect)", rc);
  }
  if (int rc =
          seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(sendto), 1, SCMP_A4_64(SCMP_CMP_EQ, 0));
      rc != 0) {
    return failed("seccomp_rule_add(sendto)", rc);
  }
  if (int rc = seccomp_rule_add(filter, SCMP_ACT_NOTIFY, SCMP_SYS(sendto), 1,
                                SCMP_A4_64(SCMP_CMP_NE, 0));
      rc != 0) {
    return failed("seccomp_rule_add(sendto)", rc);
  }
  return true;
}

// Loads the filter with a new listener, through the seccomp() system call itself so as to ask
// for what libseccomp 2.5 cannot: a caller whose call the supervisor has received waits for the
// answer killably only (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, 5.19+), so a signal (Go's
// preemption signal, say) cannot make it restart a connect() the supervisor is making.
Expected<int, std::string> load_with_listener(scmp_filter_ctx filter) {
  const int memory = ::memfd_create("sandgate-seccomp", MFD_CLOEXEC);
  if (memory < 0) {
    return Unexpected{std::string("memfd_create: ") + std::strerror(errno)};
  }
  std::vector<char> program;
  if (int rc = seccomp_export_bpf(filter, memory); rc != 0) {
    ::close(memory);
    return failed("seccomp_export_bpf", rc);
  }
  const off_t size = ::lseek(memory, 0, SEEK_END);
  program.resize(size > 0 ? static_cast<std::size_t>(size) : 0);
  const bool read_back = size > 0 && ::pread(memory, program.data(), program.size(), 0) == size;
  ::close(memory);
  if (!read_back || program.size() % sizeof(sock_filter) != 0) {
    return Unexpected{std::string("seccomp_export_bpf: no program")};
  }
  sock_fprog prog{static_cast<unsigned short>(program.size() / sizeof(sock_filter)),
                  reinterpret_cast<sock_filter*>(program.data())};
  constexpr unsigned long kNewListener = 1UL << 3;       // SECCOMP_FILTER_FLAG_NEW_LISTENER
  constexpr unsigned long kWaitKillableRecv = 1UL << 5;  // SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
  long fd =
      ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, kNewListener | kWaitKillableRecv, &prog);
  if (fd < 0 && errno == EINVAL) {
    fd = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, kNewListener, &prog);
  }
  if (fd < 0) {
    return Unexpected{std::string("seccomp(SECCOMP_SET_MODE_FILTER): ") + std::strerror(errno)};
  }
  return static_cast<int>(fd);
}

}  // namespace

Expected<int, std::string> install_syscall_filter(bool supervise_unix_sockets) {
  Filter filter(seccomp_init(SCMP_ACT_ERRNO(ENOSYS)), seccomp_release);
  if (!filter) {
    return Unexpected{std::string("seccomp_init failed")};
  }
  for (std::string_view name : allowed_system_calls()) {
    if (supervise_unix_sockets && (name == "connect" || name == "sendto")) {
      continue;
    }
    const int number = seccomp_syscall_resolve_name(std::string(name).c_str());
    if (number == __NR_SCMP_ERROR || number < 0) {
      continue;  // not a call of this architecture, or newer than this libseccomp: ENOSYS
    }
    if (int rc = seccomp_rule_add(filter.get(), SCMP_ACT_ALLOW, number, 0); rc != 0) {
      return Unexpected{"seccomp_rule_add(" + std::string(name) + "): " + std::strerror(-rc)};
    }
  }
  if (auto added = add_socket_rules(filter.get()); !added) {
    return Unexpected{added.error()};
  }
  if (auto added = add_process_rules(filter.get()); !added) {
    return Unexpected{added.error()};
  }
  if (auto added = add_mode_rules(filter.get()); !added) {
    return Unexpected{added.error()};
  }
  if (supervise_unix_sockets) {
    if (auto added = add_supervised_rules(filter.get()); !added) {
      return Unexpected{added.error()};
    }
    return load_with_listener(filter.get());
  }
  if (int rc = seccomp_load(filter.get()); rc != 0) {
    return failed("seccomp_load", rc);
  }
  return -1;
}

}  // namespace sandgate::sandbox
