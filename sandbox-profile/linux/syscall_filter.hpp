// The system calls of every process inside `sandgate run` on Linux: an allow-list, installed by
// the namespace's init on itself before the self-probe and the command exist, so that init, the
// probe, the connector and the command (and everything they start) are held by the same filter.
//
// The list follows Docker's default seccomp profile and Flatpak's filter: the calls ordinary
// programs make (files, memory, processes, signals, sockets, time, SysV and POSIX IPC) are
// allowed; everything else answers ENOSYS, the answer of a kernel that lacks the call, so a tool
// built for a newer kernel falls back instead of failing hard. Left out on purpose, among others:
// the kernel keyrings (add_key, request_key, keyctl: a key upcall runs a helper in the host's
// namespaces as root, and the dns_resolver key type resolves through the host's resolver), bpf,
// perf_event_open, userfaultfd, io_uring (its operations are invisible to seccomp), kexec, module
// loading, open_by_handle_at, mount and the new mount API, pivot_root, chroot, setns, fanotify,
// quotactl, swap, reboot, syslog, the clock setters and personality flags other than the
// harmless ones.
//
// Three calls are allowed with conditions on their arguments:
//   - socket() and socketpair(): only AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK (others answer
//     EAFNOSUPPORT). AF_VSOCK reaches the hypervisor whatever the network namespace; the rarer
//     families are attack surface no build needs.
//   - clone() and unshare(): no new namespaces (EPERM); clone3() answers ENOSYS so that the C
//     library falls back to clone(), whose flags seccomp can read.
//   - personality(): the values Docker allows (reading it, PER_LINUX, UNAME26, ADDR_NO_RANDOMIZE).
// Programs of another architecture (32-bit x86 on x86-64) are killed: their socketcall() hides
// the family, and their system call numbers are another table.
//
// ptrace, process_vm_readv and pidfd_getfd stay allowed (debuggers, strace): the kernel lets a
// process use them only on a dumpable target it could signal, and every sandgate process inside
// (init, the connector) makes itself non-dumpable before the command exists.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rules/expected.hpp"

namespace sandgate::sandbox {

// The names of the system calls allowed without conditions (pure; names the running
// libseccomp does not know are skipped when the filter is built: they stay ENOSYS).
const std::vector<std::string_view>& allowed_system_calls();

// Calls never allowed without conditions (the dangerous ones, and those allowed only with the
// conditions above): the test of the list checks it against this.
const std::vector<std::string_view>& refused_system_calls();

// Installs the filter on the calling process (inherited across fork and exec). Needs
// no_new_privs set first (or CAP_SYS_ADMIN). With `supervise_unix_sockets`, connect() and
// sendto() with an address are handed to a supervisor (unix_connect_guard.hpp) and the result is
// the filter's listener descriptor for it; else -1. The error says which step failed. Linux
// only; call while single-threaded. Not thread-safe.
Expected<int, std::string> install_syscall_filter(bool supervise_unix_sockets = false);

}  // namespace sandgate::sandbox
