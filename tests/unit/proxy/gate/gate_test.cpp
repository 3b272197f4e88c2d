// The gate (proxy/gate/gate.hpp) as `serve` and `run` start it, in this process on loopback port
// 0 with its files in a scratch folder: every reload of the request rules and of the budgets is
// counted in /metrics by result, so a failed one shows (and the last good rules stay in force,
// as the policy the gate hands out says); a good one is counted and in force.
#include "proxy/gate/gate.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "tests/support/temporary_folder.hpp"

namespace sandgate::gate {
namespace {

class GateTest : public ::testing::Test {
 protected:
  void SetUp() override { write("blocked.txt", "blocked.test\n"); }
  void TearDown() override { gate_.reset(); }

  std::string path(const std::string& name) const { return folder_ / name; }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::trunc) << text;
  }

  // Opens and starts a gate on 127.0.0.1:0 with `configure`'s settings, serving on a thread of
  // its own.
  void start(const std::function<void(settings::Settings&)>& configure) {
    settings::Settings s;
    s.listen = settings::ListenAddress{settings::TcpEndpoint{"127.0.0.1", 0}};
    s.threads = 1;
    s.blocklist_path = path("blocked.txt");
    s.blocklist_is_default = false;
    s.log_format = settings::LogFormat::json;
    s.log_file = path("sandgate.log");
    s.drain = std::chrono::seconds(1);
    configure(s);
    settings::Sources sources;
    sources.home = folder_.path();
    auto opened = Gate::open({s, sources, settings::MissingDefaultBlocklist::use_template});
    ASSERT_TRUE(opened) << opened.error().message;
    gate_ = std::move(*opened);
    auto error = gate_->start();
    ASSERT_FALSE(error) << error->message;
    gate_->start_thread();
  }

  // Reloads every file (as SIGHUP does; the gate's watcher may read it too) until `count` has
  // moved past `before`, or 10 s pass.
  bool reload_until(const std::atomic<std::uint64_t>& count, std::uint64_t before) {
    gate_->reload();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (count.load() <= before) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

  // Whether /metrics shows `count` as the reloads of `file` with `result` (read while the count
  // holds still: the watcher may reload once more meanwhile).
  bool metrics_show(std::string_view file, std::string_view result,
                    const std::atomic<std::uint64_t>& count) const {
    for (int attempt = 0; attempt < 100; ++attempt) {
      const std::uint64_t value = count.load();
      const std::string text = gate_->render_metrics();
      if (count.load() == value) {
        return text.find("sandgate_reloads_total{file=\"" + std::string(file) + "\",result=\"" +
                         std::string(result) + "\"} " + std::to_string(value) + "\n") !=
               std::string::npos;
      }
    }
    return false;
  }

  testing::TemporaryFolder folder_{"gate-test"};
  std::unique_ptr<Gate> gate_;  // after the folder: goes first
};

TEST_F(GateTest, AFailedReloadOfTheRequestRulesIsCountedAndTheLastGoodOnesStay) {
  write("requests.txt", "allow origin.test GET\n");
  start([this](settings::Settings& s) { s.request_rules_path = path("requests.txt"); });
  const auto& counts = gate_->reloader().request_rules_counts();
  const rules::Host origin = *rules::parse_host("origin.test");
  const rules::Host other = *rules::parse_host("other.test");
  ASSERT_TRUE(gate_->current_policy()->requests().judges(origin, 443));

  // A blank file is taken for a failed write: the rules in force stay.
  write("requests.txt", "  \n");
  ASSERT_TRUE(reload_until(counts.failed, 0));
  EXPECT_TRUE(metrics_show("request-rules", "failed", counts.failed)) << gate_->render_metrics();
  EXPECT_TRUE(gate_->current_policy()->requests().judges(origin, 443));

  // A good one is counted and in force.
  write("requests.txt", "allow other.test GET\n");
  ASSERT_TRUE(reload_until(counts.ok, counts.ok.load()));
  EXPECT_TRUE(metrics_show("request-rules", "ok", counts.ok)) << gate_->render_metrics();
  EXPECT_TRUE(gate_->current_policy()->requests().judges(other, 443));
  EXPECT_FALSE(gate_->current_policy()->requests().judges(origin, 443));
}

TEST_F(GateTest, AFailedReloadOfTheBudgetsIsCountedAndTheLastGoodOnesStay) {
  write("budgets.txt", "origin.test up=2kB\n");
  start([this](settings::Settings& s) { s.budgets_path = path("budgets.txt"); });
  const auto& counts = gate_->reloader().budgets_counts();
  ASSERT_EQ(gate_->current_policy()->budgets().lines().size(), 1u);

  write("budgets.txt", "\n\t\n");
  ASSERT_TRUE(reload_until(counts.failed, 0));
  EXPECT_TRUE(metrics_show("budgets", "failed", counts.failed)) << gate_->render_metrics();
  EXPECT_EQ(gate_->current_policy()->budgets().lines().size(), 1u);

  write("budgets.txt", "origin.test up=2kB\nother.test down=1MB\n");
  ASSERT_TRUE(reload_until(counts.ok, counts.ok.load()));
  EXPECT_TRUE(metrics_show("budgets", "ok", counts.ok)) << gate_->render_metrics();
  EXPECT_EQ(gate_->current_policy()->budgets().lines().size(), 2u);
}

}  // namespace
}  // namespace sandgate::gate
