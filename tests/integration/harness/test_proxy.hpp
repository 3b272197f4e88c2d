// A real sandgate gate for integration tests: the same Gate that `serve` and `run` start, in this
// process, on 127.0.0.1 port 0, with its files in a fresh temporary folder, its decision log in
// a JSON file there and its DNS pointed at a FakeDnsServer. Destroying it stops the gate.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/gate/gate.hpp"
#include "proxy/settings/load.hpp"
#include "proxy/settings/settings.hpp"
#include "tests/fakes/fake_dns_server.hpp"

namespace sandgate::testing {

class TestProxy {
 public:
  // `configure` may change any setting before the gate starts (listen, policy, limits, admin,
  // ...). `sources` are what the gate re-reads its config file with (set --config there, and
  // config_path in `configure`, to watch one); the folder is the default home.
  explicit TestProxy(std::string blocklist_text = "",
                     std::function<void(settings::Settings&)> configure = {},
                     settings::Sources sources = {});
  ~TestProxy();

  std::uint16_t port() const { return gate_->port(); }
  fakes::FakeDnsServer& dns() { return dns_; }
  // The settings the gate was started with (changing them changes nothing in the gate).
  settings::Settings& settings() { return settings_; }
  gate::Gate& gate() { return *gate_; }
  server::Server& server() { return gate_->server(); }
  // The LaunchDarkly client, when the settings enable it.
  launchdarkly::RemoteAllowlist* remote_allowlist() { return gate_->remote_allowlist(); }
  const std::string& folder() const { return folder_; }
  // The decision log written so far (JSON lines).
  std::string log_text() const;
  // Blocks until `predicate(log_text())` holds or 5 s pass; returns whether it held.
  bool wait_for_log(const std::function<bool(const std::string&)>& predicate) const;
  // Stops accepting, drains, and joins (Gate::drain; the admin endpoint stays up, not ready,
  // until destruction); idempotent.
  void stop();

 private:
  std::string folder_;
  fakes::FakeDnsServer dns_;
  settings::Settings settings_;
  std::unique_ptr<gate::Gate> gate_;
};

// The lines of `log` (JSON or text lines) that contain every one of `parts`, in order.
std::vector<std::string> log_lines_with(const std::string& log,
                                        std::initializer_list<std::string_view> parts);

}  // namespace sandgate::testing
