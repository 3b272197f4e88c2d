// The admin endpoint against the real Prometheus tools (Debian's `prometheus` package): the real
// `sandgate serve --admin`, known traffic (one denied and one allowed CONNECT), then
//   - `promtool check metrics` on a scrape of /metrics reports no problem, and
//   - a Prometheus server of the test's own, on loopback, scraping every second, answers its
//     query API with the expected series values.
// No system service is involved: the test starts its Prometheus and stops it at the end.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/support/gate_process.hpp"
#include "tests/support/loopback_ports.hpp"
#include "tests/support/shell_command.hpp"

namespace sandgate::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kSandgate = std::string(SANDGATE_BINARY_DIR) + "/bin/sandgate";
// Prometheus starts in about a second and scrapes every second; this bounds the whole wait.
constexpr auto kQueryDeadline = 30s;

// Whether `name` is an executable on PATH.
bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream folders(path != nullptr ? path : "");
  for (std::string folder; std::getline(folders, folder, ':');) {
    if (!folder.empty() && ::access((folder + "/" + name).c_str(), X_OK) == 0) {
      return true;
    }
  }
  return false;
}

// GET `target` from 127.0.0.1:port over HTTP/1.0 (so the answer is never chunked and the server
// closes); returns the body, or nothing when the connection or the status failed.
std::optional<std::string> http_get(std::uint16_t port, const std::string& target,
                                    std::string* whole = nullptr) {
  try {
    TestClient client(port);
    client.send("GET " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    const std::string response = client.read_to_end();
    if (whole != nullptr) {
      *whole = response;
    }
    const auto body = response.find("\r\n\r\n");
    if (!response.starts_with("HTTP/1.") || response.substr(9, 3) != "200" ||
        body == std::string::npos) {
      return std::nullopt;
    }
    return response.substr(body + 4);
  } catch (const std::exception& error) {
    if (whole != nullptr) {
      *whole = error.what();
    }
    return std::nullopt;
  }
}

std::string url_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) != 0 || c == '_' || c == '-' || c == '.') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// The value of the single sample of an instant-vector answer of /api/v1/query
// (`..."result":[{"metric":{...},"value":[TIME,"VALUE"]}]...`), or nothing when the answer is
// not exactly one sample.
std::optional<std::string> single_sample_value(const std::string& json) {
  const std::string_view key = "\"value\":[";
  const auto at = json.find(key);
  if (json.find("\"status\":\"success\"") == std::string::npos || at == std::string::npos ||
      json.find(key, at + 1) != std::string::npos) {
    return std::nullopt;
  }
  const auto open = json.find(",\"", at);
  const auto close = json.find('"', open + 2);
  if (open == std::string::npos || close == std::string::npos) {
    return std::nullopt;
  }
  return json.substr(open + 2, close - open - 2);
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

// A Prometheus server of the test's own: its config, storage and log in `folder`, on
// 127.0.0.1:port, scraping `target` every second. Stopped (SIGTERM, then SIGKILL) on destruction.
class PrometheusProcess {
 public:
  PrometheusProcess(const std::string& folder, std::uint16_t target_port)
      : folder_(folder), port_(free_port()) {
    const std::string config = folder_ + "/prometheus.yml";
    std::ofstream(config) << "global:\n"
                             "  scrape_interval: 1s\n"
                             "  evaluation_interval: 1s\n"
                             "scrape_configs:\n"
                             "  - job_name: sandgate\n"
                             "    static_configs:\n"
                             "      - targets: ['127.0.0.1:"
                          << target_port << "']\n";
    pid_ = spawn_process(
        {"prometheus", "--config.file=" + config, "--storage.tsdb.path=" + folder_ + "/data",
         "--web.listen-address=127.0.0.1:" + std::to_string(port_)},
        gate_environment(folder_), -1, log_path(), error_);
  }
  ~PrometheusProcess() { stop_process(pid_, SIGTERM, 10s); }
  PrometheusProcess(const PrometheusProcess&) = delete;
  PrometheusProcess& operator=(const PrometheusProcess&) = delete;

  bool started() const { return pid_ > 0; }
  const std::string& error() const { return error_; }
  std::uint16_t port() const { return port_; }
  std::string log_path() const { return folder_ + "/prometheus.log"; }
  // The last lines of its log, for failure messages.
  std::string log_tail() const {
    const std::string log = read_text_file(log_path());
    return log.size() > 3000 ? log.substr(log.size() - 3000) : log;
  }

 private:
  std::string folder_;
  std::uint16_t port_;
  std::string error_;
  pid_t pid_ = -1;
};

class PrometheusScrape : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "sandgate-prometheus-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    folder_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(folder_, ec);
  }
  std::string folder_;
};

TEST_F(PrometheusScrape, PromtoolAcceptsTheMetricsAndPrometheusSeesTheTraffic) {
  ASSERT_TRUE(on_path("prometheus") && on_path("promtool"))
      << "prometheus and promtool are not on PATH: scripts/install-deps.sh installs Debian's "
         "`prometheus` package";

  // The gate: the admin endpoint on a port of the kernel's choosing, found in its start-up
  // notes; loopback and IP literals allowed so that the fake origin on 127.0.0.1 is reachable.
  const std::string blocklist = folder_ + "/blocked.txt";
  std::ofstream(blocklist) << "evil.test\n";
  fakes::TcpOrigin origin;
  GateProcess gate(kSandgate,
                   {"--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--blocklist", blocklist,
                    "--allow-ip", "--block-loopback=false", "--threads", "1"},
                   folder_);
  ASSERT_TRUE(gate.ready()) << gate.error();
  const auto admin_port = admin_port_from_log(gate.stderr_text());
  ASSERT_TRUE(admin_port) << "no admin endpoint note in: " << gate.stderr_text();

  // Known traffic: one denial, one tunnel carrying 1000 bytes each way.
  {
    TestClient client(gate.port());
    ASSERT_EQ(send_connect(client, "api.evil.test:443").status, 403);
  }
  {
    TestClient client(gate.port());
    ASSERT_EQ(send_connect(client, "127.0.0.1:" + std::to_string(origin.port())).status, 200);
    client.send(std::string(1000, 'x'));
    ASSERT_EQ(client.read_exact(1000).size(), 1000u);
    client.shutdown_write();
    client.read_to_end();
  }

  // promtool lints the exposition format: exit 0 and nothing printed means no problem found.
  std::string scrape_response;
  const auto metrics = http_get(*admin_port, "/metrics", &scrape_response);
  ASSERT_TRUE(metrics) << scrape_response;
  const std::string metrics_path = folder_ + "/metrics.txt";
  std::ofstream(metrics_path) << *metrics;
  const auto [lint_status, lint_output] =
      run_shell("promtool check metrics < " + shell_quote(metrics_path));
  EXPECT_EQ(lint_status, 0) << lint_output;
  EXPECT_EQ(lint_output, "") << "promtool found problems in:\n" << *metrics;

  PrometheusProcess prometheus(folder_, *admin_port);
  ASSERT_TRUE(prometheus.started()) << prometheus.error();

  // Each query must come to exactly one sample with this value; they share one deadline.
  struct Expectation {
    std::string query;
    std::string value;
  };
  const std::vector<Expectation> expectations = {
      {"up{job=\"sandgate\"}", "1"},
      {"sandgate_decisions_total{verdict=\"deny\",reason=\"blocklist\",enforced=\"true\"}", "1"},
      {"sandgate_decisions_total{verdict=\"allow\",reason=\"allowed\",enforced=\"true\"}", "1"},
      {"sandgate_tunnels_total", "1"},
      {"sandgate_bytes_total{direction=\"up\"}", "1000"},
      {"sandgate_upstream_connect_seconds_count", "1"},
      {"count(sandgate_build_info)", "1"},
  };
  const auto deadline = std::chrono::steady_clock::now() + kQueryDeadline;
  for (const auto& expected : expectations) {
    std::string answer;
    std::optional<std::string> value;
    while (true) {
      const auto body =
          http_get(prometheus.port(), "/api/v1/query?query=" + url_encode(expected.query), &answer);
      value = body ? single_sample_value(*body) : std::nullopt;
      if (value == expected.value || std::chrono::steady_clock::now() >= deadline) {
        break;
      }
      std::this_thread::sleep_for(200ms);
    }
    ASSERT_EQ(value, expected.value)
        << "Prometheus did not answer " << expected.query << " = " << expected.value << " within "
        << kQueryDeadline.count() << " s.\nlast answer: " << answer << "\nprometheus log:\n"
        << prometheus.log_tail();
  }
}

}  // namespace
}  // namespace sandgate::testing
