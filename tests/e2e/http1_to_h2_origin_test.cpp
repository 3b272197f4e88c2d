// An HTTP/1.1 client (curl --http1.1) through the gate to an inspected origin that speaks only
// HTTP/2 (Node's http2 module without allowHTTP1: tests/support/node_h2_origin.mjs): each request
// goes as a stream of an HTTP/2 connection the gate shares (proxy/session/fronts/http_over_h2.hpp,
// exchange/h1_over_h2_upstream.hpp), through the same request pipeline and response stages as
// over HTTP/1.1: bodies both ways in either framing, a large download byte for byte, a masked
// secret filled in and its echo cleaned, a refusal that never reaches the origin, a kept-alive
// client connection, and two clients sharing one origin connection (counted by the origin). Each
// failed before the gate carried HTTP/1.1 over h2: it offered such an origin http/1.1 only.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
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

constexpr const char* kToken = "ghp_RealTokenRealTokenRealToken0123456789";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

class Http1ToH2OriginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/http1-to-h2-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    make_test_certificates(folder_, {"DNS:h2.test"}, "http1-to-h2-ca");
    std::ofstream(folder_ + "/token") << kToken << "\n";
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

  // The gate, inspecting h2.test with API_TOKEN bound to it; `request_rules` when not empty.
  void gate(const std::string& request_rules = {}) {
    if (!request_rules.empty()) {
      std::ofstream(folder_ + "/requests.txt") << request_rules;
    }
    proxy_ = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;  // the origin is on loopback
      s.tls_ports = {port_};
      s.ca_dir = folder_ + "/gate-ca";
      s.inspect_extra_ca = {folder_ + "/ca.pem"};
      s.inspect = {"h2.test"};
      s.secrets.push_back(*secrets::parse_secret_spec("API_TOKEN=h2.test=@" + folder_ + "/token"));
      if (!request_rules.empty()) {
        s.request_rules_path = folder_ + "/requests.txt";
      }
    });
    proxy_->dns().set("h2.test", {"127.0.0.1"});
  }
  // curl --http1.1 through the gate, trusting its CA; `args` end with the URL(s).
  CommandResult curl(const std::string& args) const {
    return run_shell("curl -sS --http1.1 --max-time 20 --proxy http://127.0.0.1:" +
                     std::to_string(proxy_->port()) + " --cacert " + folder_ + "/gate-ca/ca.pem " +
                     args + " 2>&1");
  }
  std::string url(const std::string& path) const {
    return "'https://h2.test:" + std::to_string(port_) + path + "'";
  }
  std::string masked() const {
    for (const auto& secret : proxy_->gate().secrets().all()) {
      if (secret.spec.name == "API_TOKEN") {
        return secret.sentinel;
      }
    }
    ADD_FAILURE() << "no API_TOKEN";
    return {};
  }
  // What reached the origin: "METHOD PATH BODY_BYTES" a line.
  std::string received() const {
    return read_file(folder_ + "/" + std::to_string(port_) + ".requests");
  }
  // The HTTP/2 connections the origin accepted.
  std::size_t sessions() const {
    return count_of(read_file(folder_ + "/" + std::to_string(port_) + ".sessions"), "session\n");
  }
  // A file of `size` bytes of 'u' in the test's folder.
  std::string upload_file(std::size_t size) const {
    const std::string path = folder_ + "/upload-" + std::to_string(size);
    std::ofstream(path, std::ios::binary) << std::string(size, 'u');
    return path;
  }

  std::string folder_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildServer> origin_;
  std::unique_ptr<TestProxy> proxy_;
};

// A GET, a POST whose body has a Content-Length and one sent chunked: each answered by the
// HTTP/2-only origin, which got each body whole.
TEST_F(Http1ToH2OriginTest, GetAndUploadsInEitherFramingReachAnOriginThatSpeaksOnlyH2) {
  gate();
  const auto got = curl("-w ' %{http_version} %{http_code}' " + url("/bytes?n=5"));
  EXPECT_EQ(got.output, "bbbbb 1.1 200") << got.output;
  const auto sized = curl("--data-binary @" + upload_file(300000) + " " + url("/upload"));
  EXPECT_EQ(sized.output, "received 300000 bytes\n") << sized.output;
  const auto chunked = curl("-H 'Transfer-Encoding: chunked' --data-binary @" +
                            upload_file(200001) + " " + url("/upload"));
  EXPECT_EQ(chunked.output, "received 200001 bytes\n") << chunked.output;
  EXPECT_TRUE(contains(received(), "GET /bytes?n=5 0\n")) << received();
  EXPECT_TRUE(contains(received(), "POST /upload 300000\n")) << received();
  EXPECT_TRUE(contains(received(), "POST /upload 200001\n")) << received();
}

// Several MiB down, with the origin's content-length and without one (then chunked to the
// client): every byte, and nothing else.
TEST_F(Http1ToH2OriginTest, ALargeDownloadArrivesByteForByte) {
  gate();
  const std::string sized = folder_ + "/sized";
  const auto first = curl("-o " + sized + " -w '%{http_code}' " + url("/bytes?n=6000000"));
  EXPECT_EQ(first.output, "200") << first.output;
  EXPECT_EQ(read_file(sized), std::string(6000000, 'b'));
  const std::string streamed = folder_ + "/streamed";
  const auto second = curl("-D - -o " + streamed + " " + url("/stream?n=3000000"));
  EXPECT_TRUE(contains(second.output, "transfer-encoding: chunked")) << second.output;
  EXPECT_EQ(read_file(streamed), std::string(3000000, 's'));
}

// The masked secret is filled in with its real value for the origin, and the origin's echo of
// that value (in two DATA frames, cut in its middle, back to back and 300 ms apart) comes back
// as the masked value.
TEST_F(Http1ToH2OriginTest, AMaskedSecretIsFilledInAndItsEchoCleaned) {
  gate();
  const std::string sentinel = masked();
  for (const std::string gap : {"0", "300"}) {
    const auto echoed =
        curl("-H 'Authorization: Bearer " + sentinel + "' " + url("/split?gap=" + gap));
    EXPECT_EQ(echoed.output, "the origin says Bearer " + sentinel + " back\n") << gap;
    EXPECT_FALSE(contains(echoed.output, "RealTok")) << gap << ": " << echoed.output;
  }
  EXPECT_EQ(count_of(received(), "GET /split"), 2u) << received();
}

// A request the rules refuse gets the gate's 403 with Proxy-Status; the origin never sees it,
// and the next request on the same client connection goes on.
TEST_F(Http1ToH2OriginTest, ARefusedRequestGetsTheGates403AndNeverReachesTheOrigin) {
  gate("allow h2.test GET /bytes*\n");
  const auto denied = curl("-i " + url("/upload") + " -d x");
  EXPECT_TRUE(contains(denied.output, "HTTP/1.1 403")) << denied.output;
  EXPECT_TRUE(contains(denied.output, "Proxy-Status: sandgate; error=")) << denied.output;
  const auto allowed = curl(url("/bytes?n=3"));
  EXPECT_EQ(allowed.output, "bbb") << allowed.output;
  EXPECT_FALSE(contains(received(), "/upload")) << received();
  EXPECT_TRUE(contains(received(), "GET /bytes?n=3 0\n")) << received();
}

// One client connection carries several requests in turn (curl reuses it: one connect), all on
// one HTTP/2 connection to the origin.
TEST_F(Http1ToH2OriginTest, AKeptAliveClientConnectionCarriesSeveralRequests) {
  gate();
  const auto got = curl("-w ' %{num_connects}\\n' " + url("/bytes?n=1") + " " + url("/bytes?n=2") +
                        " " + url("/upload") + " " + url("/bytes?n=3"));
  EXPECT_EQ(got.output, "b 1\nbb 0\nreceived 0 bytes\n 0\nbbb 0\n") << got.output;
  EXPECT_EQ(sessions(), 1u);
}

// Two HTTP/1.1 clients share one HTTP/2 connection to the origin: one after the other, and at
// once (the second's request while the first's response is still coming).
TEST_F(Http1ToH2OriginTest, TwoHttp1ClientsShareOneOriginConnection) {
  gate();
  EXPECT_EQ(curl(url("/bytes?n=4")).output, "bbbb");
  EXPECT_EQ(curl(url("/bytes?n=4")).output, "bbbb");
  auto slow =
      std::async(std::launch::async, [this] { return curl(url("/sse?events=4&gap=300")).output; });
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(curl(url("/bytes?n=2")).output, "bb");
  const std::string events = slow.get();
  EXPECT_EQ(count_of(events, "event: delta"), 4u) << events;
  EXPECT_EQ(sessions(), 1u);
}

// A WebSocket upgrade needs the origin's HTTP/1.1, which an HTTP/2-only origin does not speak:
// the client gets the gate's 502 saying so, not a hang.
TEST_F(Http1ToH2OriginTest, AWebSocketUpgradeToAnH2OnlyOriginGetsAReadable502) {
  gate();
  EXPECT_EQ(curl(url("/bytes?n=1")).output, "b");  // (the origin's HTTP/2 is known)
  const auto upgrade = curl(
      "-i -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' "
      "-H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' " +
      url("/chat"));
  EXPECT_TRUE(contains(upgrade.output, "HTTP/1.1 502")) << upgrade.output;
  EXPECT_TRUE(contains(upgrade.output, "speaks HTTP/2")) << upgrade.output;
}

}  // namespace
}  // namespace sandgate::testing
