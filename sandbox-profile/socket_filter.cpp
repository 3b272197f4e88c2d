// The socket family filter. See socket_filter.hpp.
#include "sandbox-profile/socket_filter.hpp"

#include <seccomp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace sandgate::sandbox {

Expected<bool, std::string> deny_other_socket_families() {
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> filter(seccomp_init(SCMP_ACT_ALLOW),
                                                          seccomp_release);
  if (!filter) {
    return Unexpected{std::string("seccomp_init failed")};
  }
  const auto fail = [](const char* what, int rc) {
    return Unexpected{std::string(what) + ": " + std::strerror(-rc)};
  };
  // The family is an int: compared on its low 32 bits, as the kernel reads it (a value with
  // high bits set must not slip past).
  constexpr unsigned kAllowed[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
  for (int call : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
    // Deny every family below AF_MAX but the allowed ones, and everything from AF_MAX up.
    for (unsigned family = 0; family < AF_MAX; ++family) {
      bool allowed = false;
      for (unsigned ok : kAllowed) {
        allowed = allowed || ok == family;
      }
      if (allowed) {
        continue;
      }
      if (int rc = seccomp_rule_add(filter.get(), SCMP_ACT_ERRNO(EAFNOSUPPORT), call, 1,
                                    SCMP_A0_32(SCMP_CMP_EQ, family));
          rc != 0) {
        return fail("seccomp_rule_add(socket)", rc);
      }
    }
    if (int rc = seccomp_rule_add(filter.get(), SCMP_ACT_ERRNO(EAFNOSUPPORT), call, 1,
                                  SCMP_A0_32(SCMP_CMP_GE, AF_MAX));
        rc != 0) {
      return fail("seccomp_rule_add(socket)", rc);
    }
  }
  if (int rc = seccomp_rule_add(filter.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(io_uring_setup), 0);
      rc != 0) {
    return fail("seccomp_rule_add(io_uring_setup)", rc);
  }
  if (int rc = seccomp_load(filter.get()); rc != 0) {
    return fail("seccomp_load", rc);
  }
  return true;
}

}  // namespace sandgate::sandbox
