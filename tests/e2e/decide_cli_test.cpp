// End to end with the real curl and the real `sandgate pending` / `sandgate decide`: a gate with
// --unknown=ask and an admin endpoint (in-process, the same Gate `serve` starts), curl waiting on
// an unknown destination through it, the CLI listing the question and answering it, with and
// without the token, with the admin token, and the exit statuses of the answers it cannot give.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "proxy/ask/admin_routes.hpp"
#include "tests/fakes/http_origin.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/shell_command.hpp"

namespace sandgate::testing {
namespace {

using namespace std::chrono_literals;

const std::string kSandgate = std::string(SANDGATE_BINARY_DIR) + "/bin/sandgate";
constexpr std::string_view kToken = "a-token-for-the-decide-cli-test";
constexpr std::string_view kAdminToken = "the-person-s-own-admin-token";

bool wait_for_question(TestProxy& proxy, const std::string& host_port) {
  for (int i = 0; i < 1000; ++i) {
    if (ask::render_pending_text(proxy.gate().questions()).find(host_port) != std::string::npos) {
      return true;
    }
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

struct Fixture {
  fakes::HttpOrigin origin;
  std::unique_ptr<TestProxy> proxy;
  std::string cli;   // `sandgate` with the gate's admin address (and token) as settings
  std::string curl;  // curl through the gate to the origin
  std::string target;

  explicit Fixture(bool with_token) {
    proxy = std::make_unique<TestProxy>("", [with_token](settings::Settings& s) {
      s.policy.block_loopback = false;
      s.policy.unknown = rules::UnknownMode::ask;
      s.admin = settings::TcpEndpoint{"127.0.0.1", 0};
      if (with_token) {
        s.token = std::string(kToken);
      }
    });
    proxy->dns().set("origin.test", {"127.0.0.1"});
    target = "origin.test:" + std::to_string(origin.port());
    // A home of the test's own, and no variable of the caller's: the flags are the settings.
    cli = "env -i HOME=" + proxy->folder() + " USER=tester " + kSandgate + " --admin " +
          proxy->gate().admin_address();
    curl = "curl -sS --max-time 30 --noproxy '' -o /dev/null -w '%{http_code}' -x http://";
    if (with_token) {
      curl += "u:" + std::string(kToken) + "@";
    }
    curl += "127.0.0.1:" + std::to_string(proxy->port()) + " http://" + target + "/";
  }
};

TEST(DecideCli, PendingListsTheQuestionAndDecideReleasesTheWaitingCurls) {
  if (std::system("command -v curl >/dev/null") != 0) {
    FAIL() << "curl is required (scripts/install-deps.sh installs it)";
  }
  Fixture f(false);
  auto first = std::async(std::launch::async, [&f] { return run_shell(f.curl); });
  auto second = std::async(std::launch::async, [&f] { return run_shell(f.curl); });
  ASSERT_TRUE(wait_for_question(*f.proxy, f.target + "  2 waiting"))
      << ask::render_pending_text(f.proxy->gate().questions());

  const auto pending = run_shell(f.cli + " pending");
  EXPECT_EQ(pending.exit_code, 0) << pending.output;
  EXPECT_NE(pending.output.find("#1 " + f.target + "  2 waiting"), std::string::npos)
      << pending.output;

  const auto decided = run_shell(f.cli + " decide " + f.target + " session");
  EXPECT_EQ(decided.exit_code, 0) << decided.output;
  EXPECT_NE(decided.output.find("2 waiting request(s) decided"), std::string::npos)
      << decided.output;
  EXPECT_EQ(first.get().output, "200");
  EXPECT_EQ(second.get().output, "200");
  EXPECT_TRUE(f.proxy->wait_for_log([](const std::string& log) {
    return log.find("answered session by tester via sandgate decide") != std::string::npos;
  })) << f.proxy->log_text();

  // Remembered: curl goes through at once.
  EXPECT_EQ(run_shell(f.curl).output, "200");
  EXPECT_EQ(run_shell(f.cli + " pending").output, "no questions pending\n");
}

TEST(DecideCli, DenyRefusesAndAnswersWithoutAQuestionFail) {
  Fixture f(false);
  auto waiting = std::async(std::launch::async, [&f] { return run_shell(f.curl); });
  ASSERT_TRUE(wait_for_question(*f.proxy, f.target));
  EXPECT_EQ(run_shell(f.cli + " decide " + f.target + " d").exit_code, 0);
  EXPECT_EQ(waiting.get().output, "403");
  // No question pending: `once` is refused with status 1.
  const auto none = run_shell(f.cli + " decide " + f.target + " once");
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_NE(none.output.find("no question is pending"), std::string::npos) << none.output;
  // `always` without an allowlist file: refused, with the way out.
  const auto always = run_shell(f.cli + " decide other.test always");
  EXPECT_EQ(always.exit_code, 1) << always.output;
  EXPECT_NE(always.output.find("--allowlist"), std::string::npos) << always.output;
  // Usage errors: status 2.
  EXPECT_EQ(run_shell(f.cli + " decide " + f.target + " maybe").exit_code, 2);
  EXPECT_EQ(run_shell(f.cli + " decide 'not a host' once").exit_code, 2);
  const auto no_admin =
      run_shell("env -i HOME=" + f.proxy->folder() + " " + kSandgate + " pending");
  EXPECT_EQ(no_admin.exit_code, 2);
  EXPECT_NE(no_admin.output.find("--admin"), std::string::npos) << no_admin.output;
}

TEST(DecideCli, TheTokenSettingIsSentAsTheBearerToken) {
  Fixture f(true);
  const auto without = run_shell(f.cli + " pending");
  EXPECT_EQ(without.exit_code, 2) << without.output;
  EXPECT_NE(without.output.find("401"), std::string::npos) << without.output;
  auto waiting = std::async(std::launch::async, [&f] { return run_shell(f.curl); });
  ASSERT_TRUE(wait_for_question(*f.proxy, f.target));
  const std::string with_token = f.cli + " --token " + std::string(kToken);
  const auto pending = run_shell(with_token + " pending");
  EXPECT_EQ(pending.exit_code, 0) << pending.output;
  EXPECT_NE(pending.output.find(f.target), std::string::npos) << pending.output;
  EXPECT_EQ(run_shell(with_token + " decide " + f.target + " once").exit_code, 0);
  EXPECT_EQ(waiting.get().output, "200");
}

// With an admin token the CLI sends it, not the proxy token: the proxy token alone (which the
// agent holds) is refused, the admin token file answers.
TEST(DecideCli, TheAdminTokenIsSentWhenSetAndTheProxyTokenNoLongerAnswers) {
  fakes::HttpOrigin origin;
  TestProxy proxy("", [](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.policy.unknown = rules::UnknownMode::ask;
    s.admin = settings::TcpEndpoint{"127.0.0.1", 0};
    s.token = std::string(kToken);
    s.admin_token = std::string(kAdminToken);
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string target = "origin.test:" + std::to_string(origin.port());
  const std::string curl =
      "curl -sS --max-time 30 --noproxy '' -o /dev/null -w '%{http_code}' "
      "-x http://agent:" +
      std::string(kToken) + "@127.0.0.1:" + std::to_string(proxy.port()) + " http://" + target +
      "/";
  const std::string cli = "env -i HOME=" + proxy.folder() + " USER=tester " + kSandgate +
                          " --admin " + proxy.gate().admin_address() + " --token " +
                          std::string(kToken);
  auto waiting = std::async(std::launch::async, [&curl] { return run_shell(curl); });
  ASSERT_TRUE(wait_for_question(proxy, target));

  const auto refused = run_shell(cli + " decide " + target + " session");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("needs the admin token (the admin_token setting"),
            std::string::npos)
      << refused.output;
  EXPECT_EQ(waiting.wait_for(100ms), std::future_status::timeout) << "answered anyway";

  const std::string file = proxy.folder() + "/admin-token";
  ASSERT_EQ(
      run_shell("umask 077 && printf '%s\\n' " + std::string(kAdminToken) + " > " + file).exit_code,
      0);
  const std::string admin = cli + " --admin-token-file " + file;
  const auto pending = run_shell(admin + " pending");
  EXPECT_EQ(pending.exit_code, 0) << pending.output;
  EXPECT_NE(pending.output.find(target), std::string::npos) << pending.output;
  const auto decided = run_shell(admin + " decide " + target + " once");
  EXPECT_EQ(decided.exit_code, 0) << decided.output;
  EXPECT_EQ(waiting.get().output, "200");
}

// The admin token must differ from the proxy token: `serve` refuses to start, naming both.
TEST(DecideCli, ServeRefusesAnAdminTokenEqualToTheProxyToken) {
  TestProxy proxy;  // only for a folder of the test's own
  const auto started = run_shell("env -i HOME=" + proxy.folder() + " timeout 20 " + kSandgate +
                                 " serve --listen 127.0.0.1:0 --unknown=ask --token " +
                                 std::string(kToken) + " --admin-token " + std::string(kToken));
  EXPECT_NE(started.exit_code, 0) << started.output;
  EXPECT_NE(started.exit_code, 124) << "serve started: " << started.output;
  EXPECT_NE(started.output.find("equals the proxy token"), std::string::npos) << started.output;
  EXPECT_NE(started.output.find("--admin-token"), std::string::npos) << started.output;
  EXPECT_EQ(started.output.find(std::string(kToken)), std::string::npos) << started.output;
}

}  // namespace
}  // namespace sandgate::testing
