// A real squid (Debian's package) as a parent proxy for tests: its own process on 127.0.0.1, with
// a configuration the test writes into a temporary folder (pid, logs and hosts file there, no
// cache, no DNS off the machine: names come from the folder's hosts file and any other query
// goes to 127.0.0.1). Stopped (SIGTERM, then waited for) when destroyed.
#pragma once

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/loopback_ports.hpp"
#include "tests/support/shell_command.hpp"

namespace sandgate::testing {

class SquidProcess {
 public:
  struct Options {
    // Names squid's hosts file maps to 127.0.0.1 (the test's origins).
    std::vector<std::string> names = {};
    // Names squid refuses (http_access deny ... dstdomain): a 403 to CONNECT.
    std::vector<std::string> refused = {};
    // user:password pairs squid's basic auth accepts; empty: no authentication.
    std::vector<std::pair<std::string, std::string>> users = {};
  };

  // Whether the squid binary and, for basic auth, its helper are installed.
  static bool available() { return run_shell("command -v squid").exit_code == 0; }

  explicit SquidProcess(Options options) {
    char pattern[] = "/tmp/sandgate-squid-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) {
      throw std::runtime_error("mkdtemp failed");
    }
    folder_ = pattern;
    // As root squid runs as its cache_effective_user (proxy), which must reach these files.
    ::chmod(folder_.c_str(), 0777);
    port_ = free_port();
    std::ofstream hosts(folder_ + "/hosts");
    for (const auto& name : options.names) {
      hosts << "127.0.0.1 " << name << "\n";
    }
    for (const auto& name : options.refused) {
      hosts << "127.0.0.1 " << name << "\n";
    }
    hosts.close();
    std::ostringstream conf;
    conf << "http_port 127.0.0.1:" << port_ << "\n"
         << "pid_filename none\n"
         << "cache_log " << folder_ << "/cache.log\n"
         << "access_log stdio:" << folder_ << "/access.log\n"
         << "cache deny all\ncache_mem 1 MB\n"
         << "coredump_dir " << folder_ << "\n"
         << "hosts_file " << folder_ << "/hosts\n"
         << "dns_nameservers 127.0.0.1\n"
         << "shutdown_lifetime 0 seconds\npinger_enable off\nnetdb_filename none\n"
         << "icp_port 0\nhtcp_port 0\n";
    if (::geteuid() == 0) {
      conf << "cache_effective_user proxy\n";
    }
    if (!options.refused.empty()) {
      conf << "acl refused dstdomain";
      for (const auto& name : options.refused) {
        conf << " " << name;
      }
      conf << "\nhttp_access deny refused\n";
    }
    if (!options.users.empty()) {
      std::ofstream passwd(folder_ + "/passwd");
      for (const auto& [user, password] : options.users) {
        const auto hashed = run_shell("openssl passwd -apr1 '" + password + "'");
        if (hashed.exit_code != 0) {
          throw std::runtime_error("openssl passwd failed: " + hashed.output);
        }
        passwd << user << ":" << hashed.output;  // the output ends with its newline
      }
      passwd.close();
      ::chmod((folder_ + "/passwd").c_str(), 0644);
      conf << "auth_param basic program /usr/lib/squid/basic_ncsa_auth " << folder_
           << "/passwd\nauth_param basic realm sandgate-test\n"
           << "acl authenticated proxy_auth REQUIRED\nhttp_access deny !authenticated\n";
    }
    conf << "http_access allow localhost\nhttp_access deny all\n";
    config_ = folder_ + "/squid.conf";
    std::ofstream(config_) << conf.str();

    const auto parse = run_shell("squid -k parse -f " + config_);
    if (parse.exit_code != 0) {
      throw std::runtime_error("squid -k parse failed:\n" + parse.output);
    }
    pid_ = ::fork();
    if (pid_ == 0) {
#ifdef __linux__
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a crashed test
#endif
      const std::string out = folder_ + "/stdout.txt";
      std::freopen(out.c_str(), "w", stdout);
      std::freopen(out.c_str(), "a", stderr);
      ::execlp("squid", "squid", "-N", "-f", config_.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (!port_accepts(port_)) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("squid exited at start:\n" + read("stdout.txt") +
                                 read("cache.log"));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("squid did not listen within 15 s:\n" + read("cache.log"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  ~SquidProcess() {
    stop();
    std::error_code ignored;
    std::filesystem::remove_all(folder_, ignored);
  }
  SquidProcess(const SquidProcess&) = delete;
  SquidProcess& operator=(const SquidProcess&) = delete;

  std::uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // What squid logged of the requests it saw (one line each; written as they end).
  std::string access_log() const { return read("access.log"); }

  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (::waitpid(pid_, &status, WNOHANG) != pid_) {
        if (std::chrono::steady_clock::now() > deadline) {
          ::kill(pid_, SIGKILL);
          ::waitpid(pid_, &status, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      pid_ = -1;
    }
  }

 private:
  std::string read(const std::string& name) const {
    std::ifstream in(folder_ + "/" + name, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::string folder_;
  std::string config_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace sandgate::testing
