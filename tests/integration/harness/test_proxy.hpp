// A real sandgate server for integration tests: the same Server the daemon runs, in this
// process, on 127.0.0.1 port 0, with its files in a fresh temporary folder and its DNS pointed
// at a FakeDnsServer. Destroying it drains and joins it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "proxy/launchdarkly/remote_allowlist.hpp"
#include "proxy/log/decision_log.hpp"
#include "proxy/server/server.hpp"
#include "proxy/settings/settings.hpp"
#include "tests/fakes/fake_dns_server.hpp"

namespace sandgate::testing {

class TestProxy {
 public:
  // `configure` may change any setting before the server starts (listen, policy, limits, ...).
  explicit TestProxy(std::string blocklist_text = "",
                     std::function<void(settings::Settings&)> configure = {});
  ~TestProxy();

  std::uint16_t port() const { return port_; }
  fakes::FakeDnsServer& dns() { return dns_; }
  settings::Settings& settings() { return settings_; }
  server::Server& server() { return *server_; }
  // The LaunchDarkly client, when the settings enable it.
  launchdarkly::RemoteAllowlist* remote_allowlist() { return remote_.get(); }
  const std::string& folder() const { return folder_; }
  // The decision log written so far (JSON lines).
  std::string log_text() const;
  // Blocks until `predicate(log_text())` holds or 5 s pass; returns whether it held.
  bool wait_for_log(const std::function<bool(const std::string&)>& predicate) const;
  // Stops accepting, drains, and joins; idempotent (the destructor calls it too).
  void stop();

 private:
  std::string folder_;
  fakes::FakeDnsServer dns_;
  settings::Settings settings_;
  std::unique_ptr<log::DecisionLog> log_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<launchdarkly::RemoteAllowlist> remote_;  // after server_: destroyed first
  std::thread thread_;
  std::uint16_t port_ = 0;
};

}  // namespace sandgate::testing
