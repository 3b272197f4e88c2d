// Reading a secret's file. See token_file.hpp.
#include "proxy/settings/token_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace sandgate::settings {

Expected<std::string, std::string> read_token_line(const std::string& path,
                                                   std::string_view noun_view,
                                                   std::size_t max_length) {
  const std::string noun(noun_view);
  const auto failed = [](std::string sentence) {
    return Expected<std::string, std::string>(Unexpected{std::move(sentence)});
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return failed("cannot read the " + noun + " file: " + std::string(std::strerror(errno)));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return failed("the " + noun + " file is not a regular file");
  }
  if ((st.st_mode & (S_IROTH | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return failed("other users can read or write the " + noun + " file (mode " + std::string(mode) +
                  "); chmod 600 " + path);
  }
  std::string text(max_length + 2, '\0');
  ssize_t got = 0;
  std::size_t used = 0;
  while (used < text.size() && (got = ::read(fd, text.data() + used, text.size() - used)) != 0) {
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      return failed("cannot read the " + noun + " file: " + std::string(std::strerror(errno)));
    }
    used += static_cast<std::size_t>(got);
  }
  text.resize(used);
  std::string_view line = text;
  line = line.substr(0, line.find('\n'));
  if (line.ends_with('\r')) {
    line.remove_suffix(1);
  }
  if (line.empty()) {
    return failed("the first line of the " + noun + " file is empty; it should hold the " + noun);
  }
  return std::string(line);
}

}  // namespace sandgate::settings
