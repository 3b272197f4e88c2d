// A server the test starts as a child process on a loopback port (`openssl s_server`, one of
// tests/support/*.py, Python's http.server), stopped when the object goes. Its standard output
// goes to /dev/null; it is given 8 s to accept on its port.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

#include "tests/support/loopback_ports.hpp"

namespace sandgate::testing {

class ChildServer {
 public:
  // `command` is a shell command line (run with `exec`, so the child is the server itself).
  // `wait`: whether to wait (up to 8 s) for it to accept; without, several servers can start at
  // once and the caller waits for each (port_accepts, wait_until_accepting).
  ChildServer(std::uint16_t port, const std::string& command, bool wait = true) : port_(port) {
    pid_ = ::fork();
    if (pid_ == 0) {
      std::freopen("/dev/null", "w", stdout);
      std::freopen("/dev/null", "r", stdin);
      ::execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    if (wait) {
      wait_until_accepting();
    }
  }
  // Whether it accepts on its port within 8 s.
  bool wait_until_accepting() const {
    for (int i = 0; i < 400 && !port_accepts(port_); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return port_accepts(port_);
  }
  ~ChildServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ChildServer(const ChildServer&) = delete;
  ChildServer& operator=(const ChildServer&) = delete;

  std::uint16_t port() const { return port_; }

 private:
  std::uint16_t port_;
  pid_t pid_ = -1;
};

}  // namespace sandgate::testing
