// What the WebSocket end-to-end tests share (tests/e2e/websocket_e2e_test.cpp: HTTP/1.1 upgrades
// with Python's websockets; tests/e2e/websocket_h2_test.cpp: RFC 8441 over HTTP/2 with Node): a
// scratch folder with test certificates and the real token, a gate that inspects the test hosts
// with API_TOKEN bound to one of them, and the WebSocket's end line in the gate's log.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/shell_command.hpp"
#include "tests/support/test_certificates.hpp"

namespace sandgate::testing {

class WebSocketFixture : public ::testing::Test {
 protected:
  // The real value of API_TOKEN; the origins echo what they are sent, so a test can tell it from
  // its sentinel.
  static constexpr const char* kToken = "ghp_RealTokenRealTokenRealToken0123456789";

  // The test's folder (under TempDir, named `prefix`-XXXXXX) with a CA called `ca_name`, a leaf
  // for `names` (server.pem, server.key; ca.pem) and the token file. Fatal when the folder cannot
  // be made: call it in ASSERT_NO_FATAL_FAILURE.
  void make_folder(const std::string& prefix, const std::vector<std::string>& names,
                   const std::string& ca_name) {
    folder_ = std::string(::testing::TempDir()) + "/" + prefix + "-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    make_test_certificates(folder_, names, ca_name);
    std::ofstream(folder_ + "/token") << kToken << "\n";
  }
  // Removes the folder: a subclass stops its origins first, then calls this.
  void TearDown() override { run_shell("rm -rf " + folder_); }

  // A gate inspecting `hosts` (resolved to loopback, their origins on `tls_ports`) with the test
  // CA trusted, API_TOKEN bound to `bound_host`, `budgets` (a budgets file's text) when not
  // empty, `idle_timeout`, and whatever `more` sets besides.
  std::unique_ptr<TestProxy> inspecting_gate(
      const std::vector<std::string>& hosts, const std::vector<std::uint16_t>& tls_ports,
      const std::string& bound_host, const std::string& budgets, std::chrono::seconds idle_timeout,
      const std::function<void(settings::Settings&)>& more = {}) {
    if (!budgets.empty()) {
      std::ofstream(folder_ + "/budgets.txt") << budgets;
    }
    auto proxy = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;  // the test origins are on loopback
      s.tls_ports = tls_ports;
      s.ca_dir = folder_ + "/gate-ca";
      s.inspect_extra_ca = {folder_ + "/ca.pem"};
      s.inspect = hosts;
      s.secrets.push_back(
          *secrets::parse_secret_spec("API_TOKEN=" + bound_host + "=@" + folder_ + "/token"));
      s.idle_timeout = idle_timeout;
      if (!budgets.empty()) {
        s.budgets_path = folder_ + "/budgets.txt";
      }
      if (more) {
        more(s);
      }
    });
    for (const auto& host : hosts) {
      proxy->dns().set(host, {"127.0.0.1"});
    }
    return proxy;
  }

  static std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // The WebSocket's end line (the one that names its messages), once written.
  static std::string end_line(const TestProxy& proxy) {
    std::string line;
    proxy.wait_for_log([&line](const std::string& log) {
      std::istringstream lines(log);
      for (std::string each; std::getline(lines, each);) {
        if (each.find("WebSocket: ") != std::string::npos) {
          line = each;
          return true;
        }
      }
      return false;
    });
    return line;
  }

  std::string folder_;
};

}  // namespace sandgate::testing
