// The in-process proxy for integration tests. See test_proxy.hpp.
#include "tests/integration/harness/test_proxy.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "proxy/settings/policy_loader.hpp"

namespace sandgate::testing {

TestProxy::TestProxy(std::string blocklist_text,
                     std::function<void(settings::Settings&)> configure) {
  char pattern[] = "/tmp/sandgate-test-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  folder_ = pattern;
  {
    std::ofstream out(folder_ + "/blocked.txt");
    out << blocklist_text;
  }
  settings_.listen = "127.0.0.1:0";
  settings_.threads = 1;
  settings_.blocklist_path = folder_ + "/blocked.txt";
  settings_.blocklist_is_default = false;
  settings_.dns_servers = {dns_.endpoint()};
  settings_.log_format = settings::LogFormat::json;
  settings_.log_file = folder_ + "/sandgate.log";
  settings_.drain = std::chrono::seconds(2);
  if (configure) {
    configure(settings_);
  }

  auto log = log::DecisionLog::open(settings_.log_format, settings_.log_file, settings_.log_level);
  if (!log) {
    throw std::runtime_error(log.error());
  }
  log_ = std::move(*log);
  auto loaded = settings::load_policy(settings_, settings::MissingDefaultBlocklist::use_template);
  if (!loaded) {
    throw std::runtime_error(loaded.error());
  }
  server_ = std::make_unique<server::Server>(settings_, *log_, loaded->policy);
  auto endpoint = server_->bind();
  if (!endpoint) {
    throw std::runtime_error(endpoint.error());
  }
  port_ = endpoint->port();
  if (!settings_.launchdarkly_client_id.empty()) {
    // As `serve` does: made after the server, stopped before it.
    remote_ = std::make_unique<launchdarkly::RemoteAllowlist>(
        settings_, [this](std::string_view level, std::string_view text) { log_->note(level, text); });
    remote_->start();
    server_->use_remote_allowlist(remote_.get());
  }
  thread_ = std::thread([this] { server_->run(false); });
}

TestProxy::~TestProxy() {
  stop();
  std::error_code ignored;
  std::filesystem::remove_all(folder_, ignored);
}

void TestProxy::stop() {
  if (thread_.joinable()) {
    server_->begin_drain();
    thread_.join();
  }
  if (remote_) {
    remote_->stop();
  }
}

std::string TestProxy::log_text() const {
  if (log_) {
    log_->flush();  // lines are batched: what is logged so far, not what the last batch held
  }
  std::ifstream in(settings_.log_file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool TestProxy::wait_for_log(const std::function<bool(const std::string&)>& predicate) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate(log_text())) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return predicate(log_text());
}

}  // namespace sandgate::testing
