// Opening a pseudo-terminal pair. See pseudo_terminal.hpp.
#include "sandbox-profile/process/pseudo_terminal.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sandbox-profile/process/run_support.hpp"

namespace sandgate::sandbox {

Expected<std::pair<int, int>, std::string> open_pseudo_terminal() {
#ifdef __linux__
  constexpr int kCloseOnExec = O_CLOEXEC;
#else
  constexpr int kCloseOnExec = 0;  // XNU's posix_openpt takes O_RDWR and O_NOCTTY only
#endif
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | kCloseOnExec);
  if (master < 0) {
    return Unexpected{errno_text("posix_openpt")};
  }
  ::fcntl(master, F_SETFD, FD_CLOEXEC);
  char name[128];
  if (::grantpt(master) != 0 || ::unlockpt(master) != 0 ||
      ::ptsname_r(master, name, sizeof name) != 0) {
    const std::string error = errno_text("cannot prepare the pseudo-terminal");
    ::close(master);
    return Unexpected{error};
  }
  const int slave = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) {
    const std::string error = errno_text(std::string("cannot open ") + name);
    ::close(master);
    return Unexpected{error};
  }
  return std::make_pair(master, slave);
}

}  // namespace sandgate::sandbox
