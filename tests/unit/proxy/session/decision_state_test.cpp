// What one request is decided with (proxy/session/decision_state.hpp): the policy and settings
// of its arrival, renewed only by a reload during its own waits; report-only mode's first denial,
// kept per request and never shared with a judgement under other rules; and a stream's
// departure waking the wait in progress.
#include "proxy/session/decision_state.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "proxy/log/decision_log.hpp"
#include "rules/host.hpp"

namespace sandgate::session {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<const rules::Policy> a_policy() {
  return std::make_shared<const rules::Policy>(rules::PolicyOptions{}, rules::DomainSet{},
                                               std::nullopt);
}

std::shared_ptr<const settings::Settings> settings_enforcing(bool enforce) {
  auto settings = std::make_shared<settings::Settings>();
  settings->enforce = enforce;
  return settings;
}

class DecisionStateTest : public ::testing::Test {
 protected:
  DecisionStateTest() {
    char pattern[] = "/tmp/decision-state-XXXXXX";
    folder_ = ::mkdtemp(pattern);
    auto opened = log::DecisionLog::open(settings::LogFormat::json, folder_ + "/log");
    log_ = std::move(opened.value());
    shared_.reset(new SharedState{*log_});
    worker_ = std::make_unique<WorkerContext>(*shared_, settings_enforcing(false), a_policy());
  }
  ~DecisionStateTest() override {
    worker_.reset();
    ::unlink((folder_ + "/log").c_str());
    ::rmdir(folder_.c_str());
  }

  // A public address while IP literals are not allowed: a reportable denial (ip-address).
  static const rules::Host& address() {
    static const rules::Host host = *rules::parse_host("93.184.216.34");
    return host;
  }

  std::string folder_;
  std::unique_ptr<log::DecisionLog> log_;
  std::unique_ptr<SharedState> shared_;
  std::unique_ptr<WorkerContext> worker_;
};

TEST_F(DecisionStateTest, ReportsOnlyReportableReasonsAndOnlyWhenItsSettingsDoNotEnforce) {
  const DecisionState report_only(*worker_, settings_enforcing(false));
  EXPECT_TRUE(report_only.reports(rules::Reason::request_denied));
  EXPECT_FALSE(report_only.reports(rules::Reason::loopback));
  const DecisionState enforcing(*worker_, settings_enforcing(true));
  EXPECT_FALSE(enforcing.reports(rules::Reason::request_denied));
}

TEST_F(DecisionStateTest, KeepsTheFirstReportedDenialOfItsOwnRequestOnly) {
  DecisionState first(*worker_, worker_->settings);
  DecisionState second(*worker_, worker_->settings);
  const rules::Decision denied = first.policy().decide(address(), 443);
  ASSERT_EQ(denied.reason, rules::Reason::ip_address);
  EXPECT_TRUE(first.report_instead(denied, address(), 443));
  first.keep_reported(rules::Reason::request_denied, "r", "later");
  ASSERT_TRUE(first.reported().has_value());
  EXPECT_EQ(first.reported()->reason, rules::Reason::ip_address);
  EXPECT_FALSE(second.reported().has_value());  // another request's, untouched
  // An allow is nothing to report.
  EXPECT_FALSE(second.report_instead(rules::Decision{}, address(), 443));
  EXPECT_FALSE(second.reported().has_value());
}

TEST_F(DecisionStateTest, AReloadIsTakenOnlyWhenTheRequestDecidesAgain) {
  DecisionState decided(*worker_, worker_->settings);
  decided.keep_reported(rules::Reason::request_denied, "r", "under the old rules");
  const auto arrived_with = decided.policy_snapshot();
  worker_->policy = a_policy();  // a reload
  EXPECT_FALSE(decided.current(*worker_));
  EXPECT_EQ(decided.policy_snapshot(), arrived_with);  // still its own until it decides again
  decided.take_current_policy(*worker_);
  EXPECT_TRUE(decided.current(*worker_));
  EXPECT_FALSE(decided.reported().has_value());  // kept under the old rules, gone with them
  EXPECT_TRUE(decided.settings_current(*worker_));
  worker_->settings = settings_enforcing(true);
  EXPECT_FALSE(decided.settings_current(*worker_));
}

TEST_F(DecisionStateTest, UnderOtherRulesItReportsNothingBackAndWatchesNoStream) {
  StreamDeparture departure;
  DecisionState decided(*worker_, worker_->settings);
  decided.stream = &departure;
  decided.keep_reported(rules::Reason::request_denied, "r", "mine");
  const auto reload = a_policy();
  DecisionState judged = decided.under(reload);
  EXPECT_EQ(judged.policy_snapshot(), reload);
  EXPECT_FALSE(judged.reported().has_value());
  EXPECT_EQ(judged.stream, nullptr);
  judged.keep_reported(rules::Reason::request_not_allowed, "s", "the reload's");
  EXPECT_EQ(decided.reported()->sentence, "mine");
}

TEST_F(DecisionStateTest, AStreamsDepartureWakesTheWaitInProgress) {
  boost::asio::io_context io;
  boost::asio::steady_timer wake(io);
  wake.expires_after(1h);
  bool woken = false;
  wake.async_wait([&](const boost::system::error_code&) { woken = true; });
  StreamDeparture departure;
  departure.watch(&wake);
  departure.gone(true);
  io.run_for(1s);
  EXPECT_TRUE(woken);
  EXPECT_TRUE(departure.left());
  EXPECT_TRUE(departure.reset());
  departure.gone(false);  // the connection ending after the reset changes nothing
  EXPECT_TRUE(departure.reset());
}

}  // namespace
}  // namespace sandgate::session
