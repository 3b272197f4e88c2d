// A real OpenSSH server for end-to-end tests: sshd in the foreground on 127.0.0.1, on a free
// port, with its own host key, accepting one client key the test made, for the user running the
// test (root in CI). The SSH tests (tests/e2e/ssh_test.cpp, socks_e2e_test.cpp) build their ssh
// command lines from it.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>

#include "tests/support/loopback_ports.hpp"
#include "tests/support/shell_command.hpp"

namespace sandgate::testing {

class SshServer {
 public:
  SshServer() : folder_(make_folder()) {
    // sshd insists on its privilege separation directory even when it does not use it.
    ::mkdir("/run/sshd", 0755);
    auto keys = run_shell("ssh-keygen -q -t ed25519 -N '' -C sandgate-test-host -f " + folder_ +
                          "/host_key && ssh-keygen -q -t ed25519 -N '' -C sandgate-test-client"
                          " -f " +
                          folder_ + "/client_key && cp " + folder_ + "/client_key.pub " + folder_ +
                          "/authorized_keys");
    if (keys.exit_code != 0) {
      throw std::runtime_error("ssh-keygen failed: " + keys.output);
    }
    port_ = free_port();
    {
      std::ofstream config(folder_ + "/sshd_config");
      config << "ListenAddress 127.0.0.1:" << port_ << "\n"
             << "HostKey " << folder_ << "/host_key\n"
             << "AuthorizedKeysFile " << folder_ << "/authorized_keys\n"
             << "PidFile none\nStrictModes no\nUsePAM no\n"
             << "PermitRootLogin prohibit-password\nPubkeyAuthentication yes\n"
             << "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUseDNS no\n"
             << "PrintMotd no\nLogLevel INFO\n";
    }
    const std::string config = folder_ + "/sshd_config";
    const std::string log_path = folder_ + "/sshd.log";
    [[maybe_unused]] const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
#ifdef __linux__
      // If the test process dies (a crash, a sanitizer abort), sshd goes with it.
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) {
        ::_exit(127);
      }
#endif
      const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int null_fd = ::open("/dev/null", O_RDWR);
      ::dup2(null_fd, 0);
      ::dup2(null_fd, 1);
      ::dup2(log_fd, 2);
      ::execl("/usr/sbin/sshd", "/usr/sbin/sshd", "-D", "-e", "-f", config.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Ready when it says so; a config or key problem makes it exit at once instead.
    for (int i = 0; i < 500; ++i) {
      if (log().find("Server listening on") != std::string::npos) {
        return;
      }
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    throw std::runtime_error("sshd did not start: " + log());
  }
  ~SshServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    std::error_code ignored;
    std::filesystem::remove_all(folder_, ignored);
  }
  SshServer(const SshServer&) = delete;
  SshServer& operator=(const SshServer&) = delete;

  std::uint16_t port() const { return port_; }
  const std::string& folder() const { return folder_; }
  std::string client_key() const { return folder_ + "/client_key"; }
  std::string log() const {
    std::ifstream in(folder_ + "/sshd.log");
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

 private:
  static std::string make_folder() {
    char pattern[] = "/tmp/sandgate-sshd-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) {
      throw std::runtime_error("mkdtemp failed");
    }
    return pattern;
  }

  std::string folder_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace sandgate::testing
