// What works over HTTP/1.1 on an inspected host works over HTTP/2 (proxy/session/fronts/
// inspected_h2.cpp), each shown with real clients against a real HTTP/2 origin: egress budgets
// (request counts, uploads and downloads refused 429 before any of them moves, a streamed
// download cut where its budget ends, a budget's question under --unknown=ask), the AWS SDK's
// own SigV4 signature with a masked key made again with the real one, report-only mode, a
// streamed reply from a bound host arriving as it is sent, and the echo of a secret cleaned
// when it is cut across DATA frames or sent in trailers. The clients: curl --http2, Node's
// http2 module (tests/support/node_h2_client.mjs), botocore's signer and grpcio; the origins:
// Node's http2 module (tests/support/node_h2_origin.mjs), which controls its responses' framing
// and pace and checks signatures with the HTTP/1.1 origin's verifier (sigv4_verifier.py), and a
// grpcio server (tests/support/grpc_peer.py).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "proxy/ask/admin_routes.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/child_server.hpp"
#include "tests/support/loopback_ports.hpp"
#include "tests/support/shell_command.hpp"
#include "tests/support/streamed_events.hpp"
#include "tests/support/test_certificates.hpp"

#ifndef SANDGATE_SOURCE_DIR
#error "SANDGATE_SOURCE_DIR must name the source tree"
#endif

namespace sandgate::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kToken = "ghp_RealTokenRealTokenRealToken0123456789";
constexpr const char* kAwsKey = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// How the gate of a test is set up, beyond inspecting h2.test with API_TOKEN and
// AWS_SECRET_ACCESS_KEY bound to it.
struct GateOptions {
  std::string request_rules;  // a request-rules file's text, when not empty
  std::string budgets;        // a budgets file's text, when not empty
  bool enforce = true;        // false: report-only mode
  bool ask = false;           // --unknown=ask, h2.test allowed by the allowlist
};

GateOptions budgets_of(std::string text) {
  GateOptions options;
  options.budgets = std::move(text);
  return options;
}

class Http2ParityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/http2-parity-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    make_test_certificates(folder_, {"DNS:h2.test", "DNS:grpc.test"}, "http2-parity-ca");
    std::ofstream(folder_ + "/token") << kToken << "\n";
    std::ofstream(folder_ + "/aws-key") << kAwsKey << "\n";
    port_ = free_port();
    origin_ = std::make_unique<ChildServer>(
        port_, "node " SANDGATE_SOURCE_DIR "/tests/support/node_h2_origin.mjs " +
                   std::to_string(port_) + " " + folder_ + "/server.pem " + folder_ +
                   "/server.key '" + kAwsKey + "'");
    ASSERT_TRUE(port_accepts(port_)) << "the Node origin did not start";
  }
  void TearDown() override {
    proxy_.reset();
    origin_.reset();
    grpc_.reset();
    run_shell("rm -rf " + folder_);
  }

  TestProxy& gate(const GateOptions& options = {}) {
    if (!options.request_rules.empty()) {
      std::ofstream(folder_ + "/requests.txt") << options.request_rules;
    }
    if (!options.budgets.empty()) {
      std::ofstream(folder_ + "/budgets.txt") << options.budgets;
    }
    proxy_ = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;  // the origin is on loopback
      s.tls_ports = {port_};
      if (grpc_port_ != 0) {
        s.tls_ports.push_back(grpc_port_);
      }
      s.ca_dir = folder_ + "/gate-ca";
      s.inspect_extra_ca = {folder_ + "/ca.pem"};
      s.inspect = {"h2.test", "grpc.test"};
      s.enforce = options.enforce;
      for (const char* secret :
           {"API_TOKEN=h2.test=@token", "AWS_SECRET_ACCESS_KEY=h2.test=@aws-key"}) {
        std::string spec(secret);
        spec.insert(spec.find('@') + 1, folder_ + "/");
        s.secrets.push_back(*secrets::parse_secret_spec(spec));
      }
      if (!options.request_rules.empty()) {
        s.request_rules_path = folder_ + "/requests.txt";
      }
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
    for (const char* name : {"h2.test", "grpc.test"}) {
      proxy_->dns().set(name, {"127.0.0.1"});
    }
    return *proxy_;
  }

  std::string sentinel(const std::string& name) const {
    for (const auto& secret : proxy_->gate().secrets().all()) {
      if (secret.spec.name == name) {
        return secret.sentinel;
      }
    }
    ADD_FAILURE() << "no secret " << name;
    return {};
  }
  // curl --http2 through the gate, trusting its CA; `args` end with the URL(s).
  CommandResult curl(const std::string& args) const {
    return run_shell("curl -sS --http2 --max-time 20 --proxy http://127.0.0.1:" +
                     std::to_string(proxy_->port()) + " --cacert " + folder_ + "/gate-ca/ca.pem " +
                     args + " 2>&1");
  }
  std::string url(const std::string& path) const {
    return "'https://h2.test:" + std::to_string(port_) + path + "'";
  }
  // Node's http2 client through the gate: every METHOD:PATH[:BODY] a stream of one session.
  CommandResult node_client(const std::vector<std::string>& requests) const {
    std::string command = "node " SANDGATE_SOURCE_DIR "/tests/support/node_h2_client.mjs " +
                          std::to_string(proxy_->port()) + " h2.test " + std::to_string(port_) +
                          " " + folder_ + "/gate-ca/ca.pem";
    for (const auto& request : requests) {
      command += " '" + request + "'";
    }
    return run_shell(command + " 2>&1");
  }
  // A gRPC server on python3-grpcio for grpc.test (tests/support/grpc_peer.py), before gate().
  void start_grpc_server() {
    grpc_port_ = free_port();
    grpc_ = std::make_unique<ChildServer>(
        grpc_port_, "/usr/bin/python3 " SANDGATE_SOURCE_DIR "/tests/support/grpc_peer.py serve " +
                        std::to_string(grpc_port_) + " " + folder_ + "/server.pem " + folder_ +
                        "/server.key unused-token");
    ASSERT_TRUE(port_accepts(grpc_port_)) << "the gRPC server did not start";
  }
  // A gRPC call of test.Echo's `method` through the gate: "ok ANSWERS" or "error CODE DETAILS".
  std::string grpc_call(const std::string& method, const std::string& text) const {
    return run_shell("/usr/bin/python3 " SANDGATE_SOURCE_DIR "/tests/support/grpc_peer.py call " +
                     std::to_string(proxy_->port()) + " grpc.test " + std::to_string(grpc_port_) +
                     " " + folder_ + "/gate-ca/ca.pem " + method + " '" + text + "' 2>&1")
        .output;
  }
  // What reached the origin: "METHOD PATH BODY_BYTES" a line.
  std::string received() const {
    return read_file(folder_ + "/" + std::to_string(port_) + ".requests");
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

  std::string folder_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildServer> origin_;
  std::uint16_t grpc_port_ = 0;  // 0: no gRPC server
  std::unique_ptr<ChildServer> grpc_;
  std::unique_ptr<TestProxy> proxy_;
};

// --- budgets ---

// Three streams of one session at once against `requests=2`: two reach the origin, the third
// is answered 429 with the budget's sentence and never leaves.
TEST_F(Http2ParityTest, ARequestsBudgetAnswersTheStreamBeyondIt429) {
  gate(budgets_of("h2.test requests=2/run  #! two calls a run\n"));
  const auto got = node_client({"GET:/bytes?n=5", "GET:/bytes?n=5", "GET:/bytes?n=5"});
  EXPECT_TRUE(contains(got.output, "alpn h2\n")) << got.output;
  EXPECT_EQ(count_of(got.output, "/bytes?n=5 200 bbbbb\n"), 2u) << got.output;
  EXPECT_EQ(count_of(got.output, "/bytes?n=5 429 "), 1u) << got.output;
  EXPECT_TRUE(contains(got.output, "two calls a run")) << got.output;
  EXPECT_EQ(count_of(received(), "GET /bytes?n=5 0\n"), 2u) << received();
  // Spent for the run: a later stream on a new connection is refused too, with Proxy-Status.
  const auto again = curl("-i " + url("/bytes?n=5"));
  EXPECT_TRUE(contains(again.output, "HTTP/2 429")) << again.output;
  EXPECT_TRUE(contains(again.output, "proxy-status: sandgate; error=")) << again.output;
  EXPECT_TRUE(contains(again.output, "budget-exhausted")) << again.output;
  EXPECT_EQ(count_of(received(), "GET /bytes?n=5 0\n"), 2u) << received();
}

// gRPC's own client and server: the call beyond a spent requests budget gets RESOURCE_EXHAUSTED
// with the gate's sentence instead of the server's answer.
TEST_F(Http2ParityTest, AGrpcCallBeyondItsRequestsBudgetIsResourceExhausted) {
  start_grpc_server();
  gate(budgets_of("grpc.test requests=2/run  #! two calls a run\n"));
  EXPECT_EQ(grpc_call("Say", "one"), "ok said: one\n");
  EXPECT_EQ(grpc_call("Count", "2"), "ok part 0|part 1\n");
  const std::string spent = grpc_call("Say", "three");
  EXPECT_TRUE(spent.starts_with("error RESOURCE_EXHAUSTED ")) << spent;
  EXPECT_TRUE(contains(spent, "budget-exhausted")) << spent;
  EXPECT_TRUE(contains(spent, "two calls a run")) << spent;
  EXPECT_FALSE(contains(spent, "said: three")) << spent;
}

// An upload of known length the budget cannot hold is refused before any of it leaves; one
// that fits goes whole. (Node's client: curl 7.88 reads no response that comes before its upload
// ends, and the gate answers this one at its head, as RFC 9113 section 8.1 allows.)
TEST_F(Http2ParityTest, AnUploadOverItsBudgetIsAnswered429BeforeAnyOfItLeaves) {
  gate(budgets_of("h2.test up=20kB  #! uploads are capped\n"));
  std::ofstream(folder_ + "/big") << std::string(50000, 'u');
  const auto refused = node_client({"POST:/upload:@" + folder_ + "/big"});
  EXPECT_TRUE(contains(refused.output, "/upload 429 ")) << refused.output;
  EXPECT_TRUE(contains(refused.output, "uploads are capped")) << refused.output;
  EXPECT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return !log_lines_with(log, {"\"event\":\"end\"", "\"reason\":\"budget-exhausted\""}).empty();
  })) << proxy_->log_text();
  EXPECT_FALSE(contains(received(), "/upload")) << received();

  const auto fits = curl("--data-binary 'small enough' " + url("/upload"));
  EXPECT_TRUE(contains(fits.output, "received 12 bytes")) << fits.output;
  EXPECT_TRUE(contains(received(), "POST /upload 12\n")) << received();
}

// A response of known length that cannot fit is answered 429 instead; one of unknown length is
// cut where the budget ends, the stream reset (never made to look complete), and its end line
// says why, with the budget's line.
TEST_F(Http2ParityTest, ADownloadOverItsBudgetIsRefusedOrCutAtTheLimitWithItsLine) {
  gate(budgets_of("h2.test down=300kB  #! downloads are capped\n"));
  const auto refused = curl("-i " + url("/bytes?n=500000"));
  EXPECT_TRUE(contains(refused.output, "HTTP/2 429")) << refused.output;
  EXPECT_TRUE(contains(refused.output, "downloads are capped")) << refused.output;
  EXPECT_FALSE(contains(refused.output, "bbbbbbbb")) << refused.output;

  const auto cut = curl("-o " + folder_ + "/streamed " + url("/stream?n=1000000"));
  EXPECT_NE(cut.exit_code, 0) << cut.output;  // reset: curl knows it is not whole
  const auto streamed = read_file(folder_ + "/streamed").size();
  EXPECT_GT(streamed, 0u);
  EXPECT_LT(streamed, 300000u);
  ASSERT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return !log_lines_with(log, {"\"event\":\"end\"", "/stream", "budget-exhausted"}).empty();
  })) << proxy_->log_text();
  const auto ends = log_lines_with(proxy_->log_text(), {"\"event\":\"end\"", "/stream"});
  ASSERT_EQ(ends.size(), 1u) << proxy_->log_text();
  EXPECT_TRUE(contains(ends[0], "\"outcome\":\"budget-exhausted\"")) << ends[0];
  EXPECT_TRUE(contains(ends[0], "budgets.txt:1 h2.test")) << ends[0];
  EXPECT_TRUE(contains(ends[0], "downloads are capped")) << ends[0];
  // The ledger took exactly the budget, and counted both stops.
  EXPECT_EQ(budget_metric("sandgate_budget_spent", "down"), "300000");
  EXPECT_EQ(budget_metric("sandgate_budget_stops_total", "down"), "2");
}

// Under --unknown=ask an upload the budget cannot hold waits on a question that says what it
// needs: a no answers it 429 with nothing sent, a yes sends it whole.
TEST_F(Http2ParityTest, AnUploadOverItsBudgetWaitsOnAQuestion) {
  GateOptions asking = budgets_of("h2.test up=2kB\n");
  asking.ask = true;
  TestProxy& proxy = gate(asking);
  std::ofstream(folder_ + "/big") << std::string(20000, 'u');
  const auto question = [&]() -> std::optional<ask::PendingQuestion> {
    for (int i = 0; i < 1000; ++i) {
      for (const ask::PendingQuestion& pending : proxy.gate().questions().pending()) {
        if (pending.budget) {
          return pending;
        }
      }
      std::this_thread::sleep_for(10ms);
    }
    return std::nullopt;
  };

  auto denied = std::async(std::launch::async,
                           [this] { return node_client({"POST:/upload:@" + folder_ + "/big"}); });
  const auto asked = question();
  ASSERT_TRUE(asked) << ask::render_pending_text(proxy.gate().questions());
  EXPECT_TRUE(contains(asked->request, "more sent (the waiting transfer needs 20."))
      << asked->request;
  ASSERT_TRUE(proxy.gate().questions().answer("h2.test", port_, ask::Answer::deny, "tester",
                                              asked->request));
  const std::string refused = denied.get().output;
  EXPECT_TRUE(contains(refused, "/upload 429 ")) << refused;
  EXPECT_FALSE(contains(received(), "/upload")) << received();

  auto granted = std::async(std::launch::async, [this] {
    return curl("-i --data-binary @" + folder_ + "/big " + url("/upload")).output;
  });
  const auto again = question();
  ASSERT_TRUE(again) << ask::render_pending_text(proxy.gate().questions());
  ASSERT_TRUE(proxy.gate().questions().answer("h2.test", port_, ask::Answer::once, "tester",
                                              again->request));
  const std::string sent = granted.get();
  EXPECT_TRUE(contains(sent, "HTTP/2 200")) << sent;
  EXPECT_TRUE(contains(sent, "received 20000 bytes")) << sent;
  EXPECT_EQ(count_of(received(), "POST /upload 20000\n"), 1u) << received();
}

// --- SigV4 ---

// botocore signs with the sentinel it holds as its secret key, curl sends the request over
// HTTP/2, and the gate signs it again with the real key: the origin's verifier agrees. The
// client's own real key is left as it is (it verifies); another key too (it does not).
TEST_F(Http2ParityTest, TheAwsSdksSignatureWithAMaskedKeyIsMadeAgainWithTheRealOne) {
  gate();
  const std::string signer = folder_ + "/sign.py";
  // Writes the fields botocore's signer adds, one "Name: value" a line, for curl's -H @FILE.
  std::ofstream(signer)
      << "import sys\n"
         "from botocore.auth import S3SigV4Auth, SigV4Auth\n"
         "from botocore.awsrequest import AWSRequest\n"
         "from botocore.credentials import Credentials\n"
         "key, service, method, url, body, out = sys.argv[1:7]\n"
         "fields = {'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8'}\n"
         "request = AWSRequest(method=method, url=url, data=body.encode(), headers=fields)\n"
         "signer = S3SigV4Auth if service == 's3' else SigV4Auth\n"
         "signer(Credentials('AKIDEXAMPLE', key), service, 'us-east-1').add_auth(request)\n"
         "with open(out, 'w') as f:\n"
         "    for name, value in request.headers.items():\n"
         "        f.write(f'{name}: {value}\\n')\n";
  const auto call = [&](const std::string& key, const std::string& service,
                        const std::string& method, const std::string& path,
                        const std::string& body) {
    const std::string target = "https://h2.test:" + std::to_string(port_) + path;
    const auto signed_by =
        run_shell("/usr/bin/python3 " + signer + " '" + key + "' " + service + " " + method + " '" +
                  target + "' '" + body + "' " + folder_ + "/fields 2>&1");
    EXPECT_EQ(signed_by.exit_code, 0) << signed_by.output;
    return curl("-X " + method + " -H @" + folder_ + "/fields --data-binary '" + body + "' '" +
                target + "'")
        .output;
  };
  const std::string masked = sentinel("AWS_SECRET_ACCESS_KEY");
  const std::string sts_body = "Action=GetCallerIdentity&Version=2011-06-15";
  const std::string sts = call(masked, "sts", "POST", "/aws/sts", sts_body);
  EXPECT_TRUE(contains(sts, "<Account>123456789012</Account>")) << sts;
  const std::string s3 = call(masked, "s3", "PUT", "/aws/bucket/a%20b/c", "hello");
  EXPECT_TRUE(contains(s3, "<Account>123456789012</Account>")) << s3;
  const std::string own = call(kAwsKey, "sts", "POST", "/aws/sts", sts_body);
  EXPECT_TRUE(contains(own, "<Account>123456789012</Account>")) << own;
  const std::string other =
      call("wJalrXUtnFEMI/K7MDENG+bPxRfiCYOTHERKEYXX", "sts", "POST", "/aws/sts", sts_body);
  EXPECT_TRUE(contains(other, "SignatureDoesNotMatch")) << other;

  const std::string checks = read_file(folder_ + "/" + std::to_string(port_) + ".aws-log");
  EXPECT_EQ(checks,
            "ok POST /aws/sts\nok PUT /aws/bucket/a%20b/c\nok POST /aws/sts\n"
            "bad POST /aws/sts\n");
  EXPECT_FALSE(contains(proxy_->log_text(), "EXAMPLEKEY"));
}

// --- report-only ---

// A rule that would deny, and a budget that would stop, let the stream through in report-only
// mode: each logs its would-be refusal (the budget's once).
TEST_F(Http2ParityTest, ReportOnlyModeLetsTheStreamThroughAndLogsWhatItWouldRefuse) {
  GateOptions reporting = budgets_of("h2.test down=1000B\n");
  reporting.request_rules = "allow h2.test GET /bytes\ndeny h2.test POST /upload  #! no uploads\n";
  reporting.enforce = false;
  gate(reporting);
  const auto uploaded =
      curl("-w '%{http_version} %{http_code}\\n' --data-binary 'let me' " + url("/upload"));
  EXPECT_TRUE(contains(uploaded.output, "received 6 bytes\n2 200\n")) << uploaded.output;
  EXPECT_TRUE(contains(received(), "POST /upload 6\n")) << received();
  const auto would = log_lines_with(proxy_->log_text(), {"\"event\":\"decision\"", "/upload"});
  ASSERT_EQ(would.size(), 1u) << proxy_->log_text();
  EXPECT_TRUE(contains(would[0], "\"verdict\":\"would-deny\",\"reason\":\"request-denied\""))
      << would[0];
  EXPECT_TRUE(contains(would[0], "no uploads")) << would[0];

  // 20000 bytes against a 1000-byte budget: every byte arrives, one would-deny line.
  const auto downloaded = curl("-o " + folder_ + "/got " + url("/bytes?n=20000"));
  EXPECT_EQ(downloaded.exit_code, 0) << downloaded.output;
  const std::string got = read_file(folder_ + "/got");
  EXPECT_EQ(got.size(), 20000u);
  EXPECT_EQ(got.find_first_not_of('b'), std::string::npos);
  ASSERT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return !log_lines_with(log, {"\"event\":\"end\"", "/bytes"}).empty();
  })) << proxy_->log_text();
  EXPECT_EQ(log_lines_with(proxy_->log_text(), {"\"would-deny\"", "budget-exhausted"}).size(), 1u)
      << proxy_->log_text();
}

// --- redaction ---

// A streamed reply from a bound host streams over HTTP/2 too: four server-sent events 400 ms
// apart, each in a DATA frame of its own, the token echoed in the last, then a closing one;
// each reaches the client before the origin sends the next (an order, not a time limit), and
// the echo is cleaned.
TEST_F(Http2ParityTest, AStreamedReplyFromABoundHostArrivesAsItIsSent) {
  gate();
  const std::string masked = sentinel("API_TOKEN");
  const auto streamed = curl("-N -H 'Authorization: Bearer " + masked + "' " +
                             url("/sse?events=4&gap=400&closing=1") + " | " + kLineStamper);
  ASSERT_EQ(streamed.exit_code, 0) << streamed.output;
  ASSERT_NO_FATAL_FAILURE(expect_each_event_before_the_next(streamed.output, 5));
  EXPECT_TRUE(contains(streamed.output, "Bearer " + masked)) << streamed.output;
  EXPECT_FALSE(contains(streamed.output, "RealToken")) << streamed.output;
}

// The real value echoed in two DATA frames, cut in its middle, is cleaned whole: frames sent
// back to back, and 300 ms apart (longer than the pause after which the redaction lets go of
// what it holds that is not yet worth holding).
TEST_F(Http2ParityTest, AnEchoCutAcrossTwoDataFramesIsCleaned) {
  gate();
  const std::string masked = sentinel("API_TOKEN");
  for (const std::string gap : {"0", "5", "300"}) {
    const auto echoed =
        curl("-H 'Authorization: Bearer " + masked + "' " + url("/split?gap=" + gap));
    EXPECT_EQ(echoed.exit_code, 0) << gap << ": " << echoed.output;
    EXPECT_EQ(echoed.output, "the origin says Bearer " + masked + " back\n")
        << "frames " << gap << " ms apart";
    EXPECT_FALSE(contains(echoed.output, "RealTok")) << gap << ": " << echoed.output;
  }
  // The origin had the real value (so the echo was there to clean).
  EXPECT_EQ(count_of(received(), "GET /split"), 3u) << received();
}

// The real value echoed in the response's trailers is cleaned there too.
TEST_F(Http2ParityTest, AnEchoInTheResponsesTrailersIsCleaned) {
  gate();
  const std::string masked = sentinel("API_TOKEN");
  // curl -i prints the trailers after the body.
  const auto got = curl("-i -H 'Authorization: Bearer " + masked + "' " + url("/trailers"));
  EXPECT_TRUE(contains(got.output, "hello")) << got.output;
  EXPECT_TRUE(contains(got.output, "x-echo: Bearer " + masked)) << got.output;
  EXPECT_FALSE(contains(got.output, "RealTok")) << got.output;
}

}  // namespace
}  // namespace sandgate::testing
