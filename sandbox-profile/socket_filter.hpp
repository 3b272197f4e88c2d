// The confined command's socket families on Linux: a seccomp filter, installed last before
// exec, makes socket() and socketpair() fail with EAFNOSUPPORT for every family but AF_UNIX,
// AF_INET, AF_INET6 and AF_NETLINK. A network namespace fences IP, unix (abstract) and packet
// sockets, but not every family: AF_VSOCK reaches the hypervisor and other VMs whatever the
// namespace, and rarer families (Bluetooth, CAN, TIPC, RDS, ...) are kernel attack surface no
// build needs. io_uring_setup is denied (ENOSYS, so programs fall back to ordinary system
// calls): io_uring's operations (IORING_OP_SOCKET, 5.19+) are not seen by seccomp, so a ring
// would open any family. Programs of another architecture (32-bit x86 on x86-64) are refused
// by the filter (killed): their socketcall() hides the family from seccomp.
//
// Linux only; call in the single-threaded child after no_new_privs is set. Not thread-safe.
#pragma once

#include <string>

#include "rules/expected.hpp"

namespace sandgate::sandbox {

// Installs the filter on the calling process (inherited across fork and exec). The error says
// which step failed.
Expected<bool, std::string> deny_other_socket_families();

}  // namespace sandgate::sandbox
