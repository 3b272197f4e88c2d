// The in-process gate for integration tests. See test_proxy.hpp.
#include "tests/integration/harness/test_proxy.hpp"
#include "proxy/settings/load.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace sandgate::testing {

TestProxy::TestProxy(std::string blocklist_text, std::function<void(settings::Settings&)> configure,
                     settings::Sources sources) {
  char pattern[] = "/tmp/sandgate-test-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  folder_ = pattern;
  {
    std::ofstream out(folder_ + "/blocked.txt");
    out << blocklist_text;
  }
  settings_.listen = settings::ListenAddress{settings::TcpEndpoint{"127.0.0.1", 0}};
  settings_.threads = 1;
  settings_.blocklist_path = folder_ + "/blocked.txt";
  settings_.blocklist_is_default = false;
  settings_.dns_servers = {settings::parse_tcp_endpoint(dns_.endpoint(), true, 1).value()};
  settings_.log_format = settings::LogFormat::json;
  settings_.log_file = folder_ + "/sandgate.log";
  settings_.drain = std::chrono::seconds(2);
  if (configure) {
    configure(settings_);
  }
  if (sources.home.empty()) {
    sources.home = folder_;
  }

  auto opened = gate::Gate::open(
      {settings_, std::move(sources), settings::MissingDefaultBlocklist::use_template});
  if (!opened) {
    throw std::runtime_error(opened.error().message);
  }
  gate_ = std::move(*opened);
  if (auto error = gate_->start()) {
    throw std::runtime_error(error->message);
  }
  gate_->start_thread();
}

TestProxy::~TestProxy() {
  gate_.reset();
  std::error_code ignored;
  std::filesystem::remove_all(folder_, ignored);
}

void TestProxy::stop() { gate_->drain(); }

std::string TestProxy::log_text() const {
  gate_->log().flush();  // lines are batched: what is logged so far, not what the last batch held
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

std::vector<std::string> log_lines_with(const std::string& log,
                                        std::initializer_list<std::string_view> parts) {
  std::vector<std::string> found;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    bool all = true;
    for (std::string_view part : parts) {
      all = all && line.find(part) != std::string::npos;
    }
    if (all) {
      found.push_back(std::move(line));
    }
  }
  return found;
}

}  // namespace sandgate::testing
