// The user's sentinel key and the bytes drawn from it. See stable_sentinel.hpp.
#include "proxy/secrets/stable_sentinel.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sandgate::secrets {
namespace {

// Closes a descriptor when it goes out of scope.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) {
      ::close(fd);
    }
  }
};

std::string failure(const std::string& path, const std::string& what) {
  return "the sentinel key " + path + " " + what;
}

// Reads exactly the key's size from `fd`, which must hold no more.
Expected<SentinelKey, std::string> read_key(int fd, const std::string& path) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    return Unexpected{failure(path, std::string("cannot be read: ") + std::strerror(errno))};
  }
  if (!S_ISREG(info.st_mode) || info.st_uid != ::geteuid()) {
    return Unexpected{failure(path, "is not a regular file of yours; remove it")};
  }
  if ((info.st_mode & 077) != 0) {
    return Unexpected{failure(path, "is open to other users (chmod 600 it, or remove it)")};
  }
  if (info.st_size != static_cast<off_t>(kSentinelKeyBytes)) {
    return Unexpected{failure(path, "is not " + std::to_string(kSentinelKeyBytes) +
                                        " bytes long; remove it to make a new one")};
  }
  SentinelKey key{};
  std::size_t got = 0;
  while (got < key.size()) {
    const ssize_t n = ::read(fd, key.data() + got, key.size() - got);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return Unexpected{failure(path, "could not be read whole")};
    }
    got += static_cast<std::size_t>(n);
  }
  return key;
}

void append_field(std::string& message, std::string_view field) {
  const auto size = static_cast<std::uint32_t>(field.size());
  for (int shift = 24; shift >= 0; shift -= 8) {
    message.push_back(static_cast<char>((size >> shift) & 0xff));
  }
  message.append(field);
}

}  // namespace

Expected<SentinelKey, std::string> load_or_make_sentinel_key(const std::string& path) {
  Descriptor existing{::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)};
  if (existing.fd >= 0) {
    return read_key(existing.fd, path);
  }
  if (errno == ELOOP) {
    return Unexpected{failure(path, "is a symbolic link; remove it")};
  }
  if (errno != ENOENT) {
    return Unexpected{failure(path, std::string("cannot be opened: ") + std::strerror(errno))};
  }
  // None yet: made under a temporary name and linked into place, so that a gate starting at the
  // same moment reads either no key or a whole one, and only one of two makers wins.
  SentinelKey key{};
  if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1) {
    return Unexpected{failure(path, "could not be made: no random bytes")};
  }
  const std::string temporary = path + ".new-" + std::to_string(::getpid());
  {
    Descriptor made{
        ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)};
    if (made.fd < 0) {
      return Unexpected{failure(path, std::string("could not be made: ") + std::strerror(errno))};
    }
    if (::write(made.fd, key.data(), key.size()) != static_cast<ssize_t>(key.size()) ||
        ::fsync(made.fd) != 0) {
      ::unlink(temporary.c_str());
      return Unexpected{failure(path, "could not be written")};
    }
  }
  const bool linked = ::link(temporary.c_str(), path.c_str()) == 0;
  const int link_error = errno;
  ::unlink(temporary.c_str());
  OPENSSL_cleanse(key.data(), key.size());
  if (!linked && link_error != EEXIST) {
    return Unexpected{
        failure(path, std::string("could not be made: ") + std::strerror(link_error))};
  }
  // Read back what is in place: ours, or the one another gate linked first.
  Descriptor placed{::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)};
  if (placed.fd < 0) {
    return Unexpected{failure(path, std::string("cannot be opened: ") + std::strerror(errno))};
  }
  return read_key(placed.fd, path);
}

StableSentinelBytes::StableSentinelBytes(const SentinelKey& key, std::string_view name,
                                         std::string_view value)
    : key_(key) {
  append_field(message_, "sandgate sentinel v1");
  append_field(message_, name);
  append_field(message_, value);
}

StableSentinelBytes::~StableSentinelBytes() {
  OPENSSL_cleanse(message_.data(), message_.size());
  OPENSSL_cleanse(key_.data(), key_.size());
  OPENSSL_cleanse(block_.data(), block_.size());
}

std::uint8_t StableSentinelBytes::operator()() {
  if (used_ == block_.size()) {
    refill();
  }
  return block_[used_++];
}

void StableSentinelBytes::refill() {
  std::string input = message_;
  for (int shift = 24; shift >= 0; shift -= 8) {
    input.push_back(static_cast<char>((counter_ >> shift) & 0xff));
  }
  ++counter_;
  unsigned int size = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
       reinterpret_cast<const unsigned char*>(input.data()), input.size(), block_.data(), &size);
  OPENSSL_cleanse(input.data(), input.size());
  used_ = 0;
}

}  // namespace sandgate::secrets
