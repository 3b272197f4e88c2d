// A second hostile review of HTTP/2 on inspected hosts, against the gate itself: what a client
// that does not read can do to the other clients of a shared HTTP/2 origin connection
// (session/h2_origin.hpp), with tests/support/h2_review2_peer.py as that client, curl as the
// others, and tests/support/h2_hostile_peer.py `serve` as the origin. Each test failed on the
// code before its fix.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <string>
#include <thread>

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

constexpr const char* kOrigin =
    "/usr/bin/python3 " SANDGATE_SOURCE_DIR "/tests/support/h2_hostile_peer.py ";
constexpr const char* kPeer =
    "/usr/bin/python3 " SANDGATE_SOURCE_DIR "/tests/support/h2_review2_peer.py ";
// The origin's /big: 8 MiB, as fast as the flow control allows.
constexpr std::uint64_t kBig = 8 << 20;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class Http2Review2Test : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/http2-review2-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    make_test_certificates(folder_, {"DNS:h2.test"}, "http2-review2-ca");
    port_ = free_port();
    origin_ = std::make_unique<ChildServer>(
        port_, std::string(kOrigin) + "serve " + std::to_string(port_) + " " + folder_ +
                   "/server.pem " + folder_ + "/server.key unused-token");
    ASSERT_TRUE(port_accepts(port_)) << "the origin did not start";
    proxy_ = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;  // the origin is on loopback
      s.tls_ports = {port_};
      s.ca_dir = folder_ + "/gate-ca";
      s.inspect_extra_ca = {folder_ + "/ca.pem"};
      s.inspect = {"h2.test"};
    });
    proxy_->dns().set("h2.test", {"127.0.0.1"});
  }
  void TearDown() override {
    std::ofstream(folder_ + "/release") << "\n";
    proxy_.reset();
    origin_.reset();
    run_shell("rm -rf " + folder_);
  }

  // A client that opens `n` streams to `path` and reads none of them (h2_review2_peer.py stall),
  // until the test releases it; its output when it is done.
  std::future<std::string> stall(int n, const std::string& path) const {
    const std::string command = std::string(kPeer) + "stall " + std::to_string(proxy_->port()) +
                                " h2.test " + std::to_string(port_) + " " + folder_ +
                                "/gate-ca/ca.pem " + std::to_string(n) + " " + path + " " +
                                folder_ + "/release 2>&1";
    return std::async(std::launch::async, [command] { return run_shell(command).output; });
  }
  // Waits until the log has `lines` decision lines for `path`.
  bool decided(const std::string& path, std::size_t lines) const {
    return proxy_->wait_for_log([&](const std::string& log) {
      return log_lines_with(log, {"\"event\":\"decision\"", "\"path\":\"" + path + "\""}).size() >=
             lines;
    });
  }
  // curl --http2 through the gate: GET `path` into a file; the bytes it got, and its errors.
  std::pair<std::uint64_t, std::string> download(const std::string& path) const {
    const std::string file = folder_ + "/downloaded";
    const auto result =
        run_shell("curl -sS --http2 --max-time 20 --proxy http://127.0.0.1:" +
                  std::to_string(proxy_->port()) + " --cacert " + folder_ + "/gate-ca/ca.pem -o " +
                  file + " https://h2.test:" + std::to_string(port_) + path + " 2>&1");
    std::ifstream got(file, std::ios::binary | std::ios::ate);
    return {got ? static_cast<std::uint64_t>(got.tellg()) : 0, result.output};
  }
  void release() const { std::ofstream(folder_ + "/release") << "\n"; }

  std::string folder_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildServer> origin_;
  std::unique_ptr<TestProxy> proxy_;
};

// A client that reads nothing of six downloads: each of its streams on the shared origin
// connection fills its window (1 MiB), six more than the connection's window (4 MiB). The
// connection's window must not be what those bytes hold, or every other client of the origin
// connection waits for the one that does not read: another client's download goes whole.
TEST_F(Http2Review2Test, AClientThatDoesNotReadDoesNotStallTheOtherClientsOfItsOrigin) {
  auto staller = stall(6, "/big");
  ASSERT_TRUE(decided("/big", 6)) << proxy_->log_text();
  std::this_thread::sleep_for(1s);  // (the origin fills the six streams' windows meanwhile)
  const auto [bytes, errors] = download("/big");
  EXPECT_EQ(bytes, kBig) << errors;
  release();
  const std::string stalled = staller.get();
  EXPECT_TRUE(contains(stalled, "heads 6 resets 0")) << stalled;
}

// Past what the gate holds for an origin connection's streams (16 MiB: h2/limits.hpp,
// kOriginHeldBytes), the stream holding the most is reset, until what is held is within it
// again: the streams of a client that reads nothing are reset one by one, and the other clients'
// downloads go on.
TEST_F(Http2Review2Test, StreamsThatHoldTooMuchOfTheOriginConnectionAreReset) {
  auto staller = stall(24, "/big");
  ASSERT_TRUE(decided("/big", 24)) << proxy_->log_text();
  std::this_thread::sleep_for(1s);
  const auto [bytes, errors] = download("/big");
  EXPECT_EQ(bytes, kBig) << errors;
  release();
  const std::string stalled = staller.get();
  EXPECT_TRUE(contains(stalled, "heads 24")) << stalled;
  EXPECT_FALSE(contains(stalled, "resets 0")) << stalled;
  EXPECT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return contains(log, "\"outcome\":\"reset\"");
  })) << proxy_->log_text();
  // Said as the gate's doing, not the origin's.
  EXPECT_TRUE(contains(proxy_->log_text(),
                       "The gate reset the stream: its client did not take the response"))
      << proxy_->log_text();
}

}  // namespace
}  // namespace sandgate::testing
