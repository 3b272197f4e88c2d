// The server (proxy/server/server.hpp) on its own, as the gate drives it: bound on loopback port
// 0 or serving a listener handed over (as `run` hands over the one it made in the command's
// namespace), each decision made with the policy most recently published, and a drain that ends
// run(). Real sockets, a real decision log; the client speaks CONNECT.
#include "proxy/server/server.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "sandbox-profile/process/fd_passing.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/support/temporary_folder.hpp"

namespace sandgate::server {
namespace {

std::shared_ptr<const rules::Policy> blocking(std::string_view blocklist) {
  std::vector<rules::LoadIssue> issues;
  auto blocked = rules::DomainSet::parse(blocklist, "blocked.txt", issues);
  EXPECT_TRUE(issues.empty());
  return std::make_shared<const rules::Policy>(rules::PolicyOptions{}, std::move(blocked),
                                               std::nullopt);
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    settings_.listen = settings::ListenAddress{settings::TcpEndpoint{"127.0.0.1", 0}};
    settings_.threads = 1;
    settings_.drain = std::chrono::seconds(1);
    auto log = log::DecisionLog::open(settings::LogFormat::json, folder_ / "sandgate.log");
    ASSERT_TRUE(log) << log.error();
    log_ = std::move(*log);
  }
  void TearDown() override {
    stop();
    server_.reset();
    log_.reset();
  }

  // Serves with `policy` on a thread of its own, on what `bind` (bind() or adopt_listener())
  // made; returns the port.
  template <class Bind>
  std::uint16_t serve(std::shared_ptr<const rules::Policy> policy, Bind bind) {
    server_ = std::make_unique<Server>(settings_, *log_, std::move(policy));
    auto bound = bind(*server_);
    EXPECT_TRUE(bound) << bound.error();
    thread_ = std::thread([this] { server_->run(false); });
    return bound ? bound->port() : 0;
  }
  void stop() {
    if (thread_.joinable()) {
      server_->begin_drain();
      thread_.join();
    }
  }

  testing::TemporaryFolder folder_{"server-test"};
  settings::Settings settings_;
  std::unique_ptr<log::DecisionLog> log_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

TEST_F(ServerTest, ServesOnTheLoopbackPortItBoundAndTheDrainEndsRun) {
  const std::uint16_t port =
      serve(blocking("blocked.test\n"), [](Server& server) { return server.bind(); });
  ASSERT_NE(port, 0);
  EXPECT_EQ(server_->listen_text(), "127.0.0.1:" + std::to_string(port));
  EXPECT_TRUE(server_->accepting());
  testing::TestClient client(port);
  const testing::ResponseHead reply = testing::send_connect(client, "blocked.test:443");
  EXPECT_EQ(reply.status, 403) << reply.head;
  EXPECT_NE(reply.proxy_status.find("blocklist"), std::string::npos) << reply.head;
  stop();
  EXPECT_FALSE(server_->accepting());
}

// `run` makes the listener in the command's network namespace and hands it over.
TEST_F(ServerTest, ServesOnAListenerHandedOver) {
  auto listener = sandbox::open_loopback_listener();
  ASSERT_TRUE(listener) << listener.error();
  const std::uint16_t port = serve(blocking("blocked.test\n"), [&listener](Server& server) {
    return server.adopt_listener(*listener);
  });
  ASSERT_NE(port, 0);
  testing::TestClient client(port);
  EXPECT_EQ(testing::send_connect(client, "blocked.test:443").status, 403);
}

// What a reload publishes decides the next connection; current_policy() names it. (Both
// policies refuse the destination, each for its own reason, so that no answer waits on DNS.)
TEST_F(ServerTest, TheNextConnectionIsDecidedWithThePolicyPublishedLast) {
  const std::uint16_t port =
      serve(blocking("x.test\n"), [](Server& server) { return server.bind(); });
  {
    testing::TestClient client(port);
    EXPECT_NE(testing::send_connect(client, "x.test:443").proxy_status.find("blocklist"),
              std::string::npos);
  }
  std::vector<rules::LoadIssue> issues;
  const auto next = std::make_shared<const rules::Policy>(
      rules::PolicyOptions{}, rules::DomainSet::parse("", "blocked.txt", issues),
      rules::DomainSet::parse("other.test\n", "allowed.txt", issues));
  server_->publish(next);
  EXPECT_EQ(server_->current_policy(), next);
  // Posted to the worker: a connection after the post is decided with it.
  std::string proxy_status;
  for (int attempt = 0; attempt < 500; ++attempt) {
    testing::TestClient client(port);
    proxy_status = testing::send_connect(client, "x.test:443").proxy_status;
    if (proxy_status.find("not-allowlisted") != std::string::npos) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "x.test was never refused as not allowlisted: " << proxy_status;
}

}  // namespace
}  // namespace sandgate::server
