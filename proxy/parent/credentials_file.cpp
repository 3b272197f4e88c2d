// Reading the parent proxy's credentials file. See parent_proxy.hpp.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "proxy/parent/parent_proxy.hpp"

namespace sandgate::parent {
namespace {

// The longest file read: a user name and password of a few hundred bytes each are plenty; a
// longer first line is refused rather than cut.
constexpr std::size_t kCredentialsFileLimit = 4096;

}  // namespace

Expected<Credentials, std::string> read_credentials_file(const std::string& path) {
  const auto fail = [&path](std::string why) {
    return Unexpected<std::string>{"the parent proxy credentials file " + path + ": " +
                                   std::move(why)};
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return fail(std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return fail("not a regular file");
  }
  // A password others can read is no longer the operator's alone; ssh refuses private keys
  // the same way. Group access too: a shared group is how such files usually leak.
  if ((st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return fail("its group or other users can read or write it (mode " + std::string(mode) +
                "); chmod 600 " + path);
  }
  std::string text(kCredentialsFileLimit + 1, '\0');
  std::size_t used = 0;
  while (used < text.size()) {
    const ssize_t got = ::read(fd, text.data() + used, text.size() - used);
    if (got == 0) {
      break;
    }
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      return fail(std::strerror(errno));
    }
    used += static_cast<std::size_t>(got);
  }
  text.resize(used);
  const auto newline = text.find('\n');
  if (newline == std::string::npos && used > kCredentialsFileLimit) {
    return fail("its first line is longer than " + std::to_string(kCredentialsFileLimit) +
                " bytes");
  }
  auto credentials = parse_credentials(text);
  if (!credentials) {
    return fail(credentials.error());
  }
  return credentials;
}

}  // namespace sandgate::parent
