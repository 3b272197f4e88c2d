// The confined command's pseudo-terminal. See pty_relay.hpp.
#include "sandbox-profile/pty_relay.hpp"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sandgate::sandbox {
namespace {

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

// Writes all of `data` to `fd` (nowhere when fd < 0); false when `fd` is gone.
bool write_all(int fd, const char* data, std::size_t size) {
  while (fd >= 0 && size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) {
        continue;
      }
      if (errno == EAGAIN) {
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, 100);
        continue;
      }
      return false;
    }
    data += written;
    size -= static_cast<std::size_t>(written);
  }
  return true;
}

}  // namespace

bool PtyRelay::wanted() {
  return ::isatty(STDIN_FILENO) == 1 && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
}

Expected<std::unique_ptr<PtyRelay>, std::string> PtyRelay::open() {
  std::unique_ptr<PtyRelay> pty(new PtyRelay());
  pty->master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (pty->master_ < 0) {
    return Unexpected{errno_text("posix_openpt")};
  }
  char name[128];
  if (::grantpt(pty->master_) != 0 || ::unlockpt(pty->master_) != 0 ||
      ::ptsname_r(pty->master_, name, sizeof name) != 0) {
    return Unexpected{errno_text("cannot prepare the pseudo-terminal")};
  }
  pty->slave_ = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (pty->slave_ < 0) {
    return Unexpected{errno_text(std::string("cannot open ") + name)};
  }
  termios modes{};
  if (::tcgetattr(STDIN_FILENO, &modes) == 0) {
    ::tcsetattr(pty->slave_, TCSANOW, &modes);
  }
  winsize size{};
  if (::ioctl(STDIN_FILENO, TIOCGWINSZ, &size) == 0) {
    ::ioctl(pty->slave_, TIOCSWINSZ, &size);
  }
  for (int fd = 0; fd <= 2; ++fd) {
    if (::isatty(fd) == 1) {
      pty->streams_ |= 1U << fd;
    }
  }
  pty->output_ = ::isatty(STDOUT_FILENO) == 1   ? STDOUT_FILENO
                 : ::isatty(STDERR_FILENO) == 1 ? STDERR_FILENO
                                                : -1;
  if (::pipe2(pty->stop_pipe_, O_CLOEXEC) != 0) {
    return Unexpected{errno_text("pipe")};
  }
  return pty;
}

PtyRelay::~PtyRelay() {
  finish();
  for (int fd : {master_, slave_, stop_pipe_[0], stop_pipe_[1]}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

void PtyRelay::close_slave() {
  if (slave_ >= 0) {
    ::close(slave_);
    slave_ = -1;
  }
}

void PtyRelay::start() {
  if (::tcgetattr(STDIN_FILENO, &saved_) == 0) {
    termios raw = saved_;
    ::cfmakeraw(&raw);
    raw_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  thread_ = std::thread([this] { relay(); });
}

void PtyRelay::resize() {
  winsize size{};
  if (::ioctl(STDIN_FILENO, TIOCGWINSZ, &size) == 0) {
    ::ioctl(master_, TIOCSWINSZ, &size);  // the kernel sends SIGWINCH to the command
  }
}

void PtyRelay::finish() {
  if (thread_.joinable()) {
    const char stop = 1;
    ssize_t ignored = ::write(stop_pipe_[1], &stop, 1);
    (void)ignored;
    thread_.join();
  }
  if (raw_) {
    // TCSADRAIN: what the user typed meanwhile stays for their shell, as after any program.
    ::tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_);
    raw_ = false;
  }
}

void PtyRelay::relay() {
  char buffer[16384];
  bool input_open = true;
  for (;;) {
    pollfd fds[3] = {{master_, POLLIN, 0},
                     {stop_pipe_[0], POLLIN, 0},
                     {input_open ? STDIN_FILENO : -1, POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      return;
    }
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t got = ::read(master_, buffer, sizeof buffer);
      if (got <= 0 && errno != EINTR && errno != EAGAIN) {
        return;  // EIO: every slave is closed, the command and its children are gone
      }
      if (got > 0) {
        write_all(output_, buffer, static_cast<std::size_t>(got));
      }
    }
    if ((fds[2].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t got = ::read(STDIN_FILENO, buffer, sizeof buffer);
      if (got > 0) {
        write_all(master_, buffer, static_cast<std::size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        input_open = false;
      }
    }
    if ((fds[1].revents & POLLIN) != 0) {
      // The command has ended: relay what it left in the terminal, without waiting for more.
      const int flags = ::fcntl(master_, F_GETFL);
      ::fcntl(master_, F_SETFL, flags | O_NONBLOCK);
      for (;;) {
        const ssize_t got = ::read(master_, buffer, sizeof buffer);
        if (got <= 0) {
          break;
        }
        write_all(output_, buffer, static_cast<std::size_t>(got));
      }
      return;
    }
  }
}

}  // namespace sandgate::sandbox
