// A hostile review of HTTP/2 on inspected hosts, against the gate itself: what a confined
// client's tools (tests/support/h2_review_peer.py, frame by frame on python3-h2; curl --http2)
// can make of concurrent streams, stream state and frame floods, with Node's http2 module as the
// origin (tests/support/node_h2_origin.mjs). Each test failed on the code before its fix.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "proxy/ask/admin_routes.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/child_server.hpp"
#include "tests/support/loopback_ports.hpp"
#include "tests/support/shell_command.hpp"
#include "tests/support/test_certificates.hpp"

#ifndef SANDGATE_SOURCE_DIR
#error "SANDGATE_SOURCE_DIR must name the source tree"
#endif

namespace sandgate::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPeer =
    "/usr/bin/python3 " SANDGATE_SOURCE_DIR "/tests/support/h2_review_peer.py ";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// How the gate of a test is set up, beyond inspecting h2.test.
struct GateOptions {
  std::string budgets;  // a budgets file's text, when not empty
  bool ask = false;     // --unknown=ask, h2.test allowed by the allowlist
};

class Http2ReviewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/http2-review-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    make_test_certificates(folder_, {"DNS:h2.test"}, "http2-review-ca");
    port_ = free_port();
    origin_ = std::make_unique<ChildServer>(
        port_, "node " SANDGATE_SOURCE_DIR "/tests/support/node_h2_origin.mjs " +
                   std::to_string(port_) + " " + folder_ + "/server.pem " + folder_ +
                   "/server.key unused-key");
    ASSERT_TRUE(port_accepts(port_)) << "the Node origin did not start";
  }
  void TearDown() override {
    proxy_.reset();
    origin_.reset();
    run_shell("rm -rf " + folder_);
  }

  TestProxy& gate(const GateOptions& options = {}) {
    if (!options.budgets.empty()) {
      std::ofstream(folder_ + "/budgets.txt") << options.budgets;
    }
    proxy_ = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;  // the origin is on loopback
      s.tls_ports = {port_};
      s.ca_dir = folder_ + "/gate-ca";
      s.inspect_extra_ca = {folder_ + "/ca.pem"};
      s.inspect = {"h2.test"};
      if (!options.budgets.empty()) {
        s.budgets_path = folder_ + "/budgets.txt";
      }
      if (options.ask) {
        std::ofstream(folder_ + "/allow.txt") << "h2.test\n";
        s.allowlist_path = folder_ + "/allow.txt";
        s.policy.unknown = rules::UnknownMode::ask;
        s.admin = settings::TcpEndpoint{"127.0.0.1", 0};
        s.ask_timeout = std::chrono::seconds(30);
      }
    });
    proxy_->dns().set("h2.test", {"127.0.0.1"});
    return *proxy_;
  }

  // The review peer's MODE through the gate to h2.test, with its further arguments.
  std::string peer(const std::string& mode, const std::string& args) const {
    return run_shell(std::string(kPeer) + mode + " " + std::to_string(proxy_->port()) +
                     " h2.test " + std::to_string(port_) + " " + folder_ + "/gate-ca/ca.pem " +
                     args + " 2>&1")
        .output;
  }
  // curl --http2 through the gate, trusting its CA; `args` end with the URL.
  CommandResult curl(const std::string& args) const {
    return run_shell("curl -sS --http2 --max-time 20 --proxy http://127.0.0.1:" +
                     std::to_string(proxy_->port()) + " --cacert " + folder_ + "/gate-ca/ca.pem " +
                     args + " 2>&1");
  }
  std::string url(const std::string& path) const {
    return "'https://h2.test:" + std::to_string(port_) + path + "'";
  }
  // The value /metrics gives `name` for the budget of `kind` on budgets.txt's first line; "" when
  // it gives none.
  std::string budget_metric(const std::string& name, const std::string& kind) const {
    const std::string labels = "budgets.txt:1 h2.test\",kind=\"" + kind + "\",window=\"run\"} ";
    std::istringstream lines(proxy_->gate().render_metrics());
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with(name + "{") && contains(line, labels)) {
        return line.substr(line.find(labels) + labels.size());
      }
    }
    return "";
  }
  // The next budget question a person is asked, once it is pending (10 s at most).
  std::optional<ask::PendingQuestion> budget_question() const {
    for (int i = 0; i < 1000; ++i) {
      for (const ask::PendingQuestion& pending : proxy_->gate().questions().pending()) {
        if (pending.budget) {
          return pending;
        }
      }
      std::this_thread::sleep_for(10ms);
    }
    return std::nullopt;
  }
  bool answer(const ask::PendingQuestion& question, ask::Answer answer) const {
    return proxy_->gate()
        .questions()
        .answer("h2.test", port_, answer, "tester", question.request)
        .has_value();
  }

  std::string folder_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildServer> origin_;
  std::unique_ptr<TestProxy> proxy_;
};

// --- frame floods ---

// Rapid reset without RST_STREAM: each stream's head passes (and costs the gate its admission
// and its lines), then DATA longer than its content-length makes the gate's HTTP/2 library reset
// it. Those resets count like the client's own: the connection ends with ENHANCE_YOUR_CALM.
TEST_F(Http2ReviewTest, StreamsMadeToBeResetByTheirContentLengthAreARapidReset) {
  gate();
  const std::string got = peer("mismatch", "2000");
  EXPECT_TRUE(contains(got, "goaway 11")) << got;  // ENHANCE_YOUR_CALM
  const auto after = curl("-i " + url("/bytes?n=5"));
  EXPECT_TRUE(contains(after.output, "HTTP/2 200")) << after.output;
}

// --- concurrent streams and budgets ---

// A download of unknown length cut by its budget inside a DATA piece asks for the rest of the
// piece; a yes grants the account that much. The piece must then be taken from the budget like
// any other bytes (as on HTTP/1.1), or what the yes granted stays in the account for the next
// piece, or another stream, to spend again: the ledger must have charged every byte that passed.
TEST_F(Http2ReviewTest, ABudgetsYesForAPieceIsChargedForThatPiece) {
  gate({.budgets = "h2.test down=100kB\n", .ask = true});
  auto download = std::async(std::launch::async, [this] {
    return curl("-o " + folder_ + "/streamed " + url("/stream?n=1000000"));
  });
  const auto first = budget_question();
  ASSERT_TRUE(first) << ask::render_pending_text(proxy_->gate().questions());
  ASSERT_TRUE(answer(*first, ask::Answer::once));
  const auto second = budget_question();
  ASSERT_TRUE(second) << ask::render_pending_text(proxy_->gate().questions());
  ASSERT_TRUE(answer(*second, ask::Answer::deny));
  download.get();
  std::ifstream streamed(folder_ + "/streamed", std::ios::binary | std::ios::ate);
  const auto delivered = static_cast<std::uint64_t>(streamed.tellg());
  const std::string spent = budget_metric("sandgate_budget_spent", "down");
  ASSERT_FALSE(spent.empty()) << proxy_->gate().render_metrics();
  EXPECT_GT(delivered, 100000u);
  EXPECT_LE(delivered, std::stoull(spent)) << "the ledger charged " << spent;
}

}  // namespace
}  // namespace sandgate::testing
