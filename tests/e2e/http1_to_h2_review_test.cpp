// A hostile review of HTTP/1.1 clients carried over HTTP/2 origin connections
// (proxy/session/fronts/http_over_h2.hpp, exchange/h1_over_h2_upstream.hpp), against the gate
// itself: tests/support/h1_over_h2_origin.py is an HTTP/2-only origin that breaks the protocol
// frame by frame, and a raw HTTP/1.1 client whose bytes and whose reading are the test's; curl
// is the ordinary client. What reaches the client is one well-formed HTTP/1.1 response or the
// gate's answer naming why, never bytes of the origin's HTTP/2 it cannot trust, never a
// leftover of one response in the next; a stream the gate cannot carry ends, logged; the gate's
// memory stays bounded by the stream's window, whatever the client reads; a reload that denies
// the host ends the exchanges under way.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/child_server.hpp"
#include "tests/support/loopback_ports.hpp"
#include "tests/support/sanitized_build.hpp"
#include "tests/support/shell_command.hpp"
#include "tests/support/test_certificates.hpp"

#ifndef SANDGATE_SOURCE_DIR
#error "SANDGATE_SOURCE_DIR must name the source tree"
#endif

namespace sandgate::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPeer =
    "/usr/bin/python3 " SANDGATE_SOURCE_DIR "/tests/support/h1_over_h2_origin.py ";
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

// This process's resident memory, in KiB (the gate runs in it).
long resident_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stol(line.substr(6));
    }
  }
  return -1;
}

// The highest resident memory seen while `work` runs, sampled every 50 ms, less what it was
// before: how much the gate took for it.
template <typename Work>
long resident_growth_kib(Work work) {
  const long before = resident_kib();
  std::atomic<bool> done{false};
  std::atomic<long> most{before};
  std::thread sampler([&] {
    while (!done) {
      most = std::max(most.load(), resident_kib());
      std::this_thread::sleep_for(50ms);
    }
  });
  work();
  done = true;
  sampler.join();
  ::testing::Test::RecordProperty("resident_growth_kib", std::to_string(most - before));
  std::printf("resident growth %ld KiB\n", most - before);
  return most - before;
}

class Http1ToH2ReviewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/http1-to-h2-review-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    make_test_certificates(folder_, {"DNS:h2.test", "DNS:few.test"}, "http1-to-h2-review-ca");
    std::ofstream(folder_ + "/token") << kToken << "\n";
    port_ = free_port();
    origin_ = std::make_unique<ChildServer>(
        port_, std::string(kPeer) + "serve " + std::to_string(port_) + " " + folder_ +
                   "/server.pem " + folder_ + "/server.key " + origin_log_path());
    ASSERT_TRUE(port_accepts(port_)) << "the origin did not start";
  }
  void TearDown() override {
    proxy_.reset();
    origin_.reset();
    run_shell("rm -rf " + folder_);
  }

  // The gate, inspecting h2.test and few.test, API_TOKEN bound to both; `budgets` when not
  // empty, `idle` as the idle timeout.
  void gate(const std::string& budgets = {}, std::chrono::seconds idle = 60s) {
    if (!budgets.empty()) {
      std::ofstream(folder_ + "/budgets.txt") << budgets;
    }
    proxy_ = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
      s.policy.block_loopback = false;  // the origin is on loopback
      s.tls_ports = {port_};
      s.ca_dir = folder_ + "/gate-ca";
      s.inspect_extra_ca = {folder_ + "/ca.pem"};
      s.inspect = {"h2.test", "few.test"};
      s.idle_timeout = idle;
      s.secrets.push_back(
          *secrets::parse_secret_spec("API_TOKEN=h2.test,few.test=@" + folder_ + "/token"));
      if (!budgets.empty()) {
        s.budgets_path = folder_ + "/budgets.txt";
      }
    });
    proxy_->dns().set("h2.test", {"127.0.0.1"});
    proxy_->dns().set("few.test", {"127.0.0.1"});
  }

  // Raw HTTP/1.1 through the gate to h2.test (h1_over_h2_origin.py raw): what came back, CR
  // shown as "\r", then "closed" or "open" (once the gate said nothing for 1 s, unless
  // `options` say otherwise). `requests` are Python string escapes.
  std::string raw(const std::vector<std::string>& requests, const std::string& options = {}) {
    std::string command = std::string(kPeer) + "raw " + std::to_string(proxy_->port()) +
                          " h2.test " + std::to_string(port_) + " " + folder_ +
                          "/gate-ca/ca.pem --wait 1 " + options;
    for (const std::string& request : requests) {
      command += " '" + request + "'";
    }
    return run_shell(command + " 2>&1").output;
  }
  // GET `path` on h2.test, with a Host of its own, as raw() writes it.
  std::string get(const std::string& path, const std::string& method = "GET") const {
    return method + " " + path + " HTTP/1.1\\r\\nHost: h2.test:" + std::to_string(port_) +
           "\\r\\n\\r\\n";
  }
  // curl --http1.1 through the gate, trusting its CA; `args` end with the URL.
  CommandResult curl(const std::string& args) const {
    return run_shell("curl -sS --http1.1 --max-time 20 --proxy http://127.0.0.1:" +
                     std::to_string(proxy_->port()) + " --cacert " + folder_ + "/gate-ca/ca.pem " +
                     args + " 2>&1");
  }
  std::string url(const std::string& path, const std::string& host = "h2.test") const {
    return "'https://" + host + ":" + std::to_string(port_) + path + "'";
  }
  std::string origin_log_path() const { return folder_ + "/origin.log"; }
  std::string origin_log() const { return read_file(origin_log_path()); }
  bool origin_logged(const std::string& line, std::chrono::milliseconds within = 5s) const {
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (!contains(origin_log(), line) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    return contains(origin_log(), line);
  }
  std::string sentinel() const {
    for (const auto& secret : proxy_->gate().secrets().all()) {
      if (secret.spec.name == "API_TOKEN") {
        return secret.sentinel;
      }
    }
    ADD_FAILURE() << "no API_TOKEN";
    return {};
  }

  std::string folder_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildServer> origin_;
  std::unique_ptr<TestProxy> proxy_;
};

constexpr const char* kNext = "HTTP/1.1 200 OK\\r\ncontent-length: 3\\r\nVia: 1.1 sandgate\\r\n";

// A response head HTTP/1.1 cannot carry as it is (CR, LF or NUL in a value, blanks around it, a
// name with a colon, a space or capitals, a pseudo-header out of place, a connection-specific
// field, content-lengths that disagree or repeat, a status that is none): the client gets the
// gate's 502 naming the broken protocol, never a field of it; the connection's next client is
// served. Before the gate said why, the 502 blamed the origin for closing the connection.
TEST_F(Http1ToH2ReviewTest, AResponseHeadHttp2ForbidsIsTheGates502NamingIt) {
  gate();
  for (const std::string field : {"crlf",
                                  "lf",
                                  "cr",
                                  "nul",
                                  "lead-space",
                                  "trail-space",
                                  "colon-name",
                                  "space-name",
                                  "upper-name",
                                  "empty-name",
                                  "crlf-name",
                                  "pseudo-late",
                                  "pseudo-request",
                                  "transfer-encoding",
                                  "connection",
                                  "keep-alive",
                                  "upgrade",
                                  "proxy-connection",
                                  "length-twice",
                                  "length-same-twice",
                                  "length-list",
                                  "length-sign",
                                  "status-101",
                                  "status-99",
                                  "status-600",
                                  "status-text",
                                  "status-missing",
                                  "status-twice"}) {
    const std::string got = raw({get("/field/" + field), get("/ok/3")});
    EXPECT_EQ(got.rfind("HTTP/1.1 502 Bad Gateway\\r\n", 0), 0u) << field << ": " << got;
    EXPECT_TRUE(contains(got, "bad-response: h2.test:" + std::to_string(port_) +
                                  ": the origin's HTTP/2 response broke the protocol ("))
        << field << ": " << got;
    EXPECT_FALSE(contains(got, "x-injected")) << field << ": " << got;
    EXPECT_FALSE(contains(got, "X-Upper")) << field << ": " << got;
    EXPECT_EQ(count_of(got, "HTTP/1.1 "), 1u) << field << ": " << got;
    EXPECT_TRUE(origin_logged("reset /field/" + field + " 1\n")) << field << origin_log();
  }
  EXPECT_EQ(curl(url("/ok/2")).output, "oo");
}

// DATA that disagrees with the content-length: more (the frame never reaches the client), fewer
// (the end never does): the client has the head and a reset, never a byte past the length, and
// the end line says why. A length of 0 then DATA: the client's response is the empty one, and
// its next request on the connection gets its own answer, not the DATA.
TEST_F(Http1ToH2ReviewTest, DataThatDisagreesWithTheLengthNeverReachesTheClient) {
  gate();
  for (const std::string path : {"/length/more", "/length/less"}) {
    const std::string got = raw({get(path), get("/ok/3")});
    EXPECT_TRUE(contains(got, "\\r\n\\r\n\nclosed")) << path << ": " << got;
    EXPECT_FALSE(contains(got, "01234")) << path << ": " << got;
    EXPECT_EQ(count_of(got, "HTTP/1.1 "), 1u) << path << ": " << got;
  }
  EXPECT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return log_lines_with(log, {"\"event\":\"end\"", "/length/more", "the DATA disagrees with",
                                "\"outcome\":\"reset\""})
               .size() == 1;
  })) << proxy_->log_text();
  const std::string zero = raw({get("/length/zero"), get("/ok/3")});
  EXPECT_EQ(zero, "HTTP/1.1 200 OK\\r\ncontent-length: 0\\r\nVia: 1.1 sandgate\\r\n\\r\n" +
                      std::string(kNext) + "\\r\nooo\nopen\n")
      << zero;
}

// DATA after a 204 or a 304, or answering a HEAD, written with the next request in one write:
// the client reads exactly two responses, the second its own.
TEST_F(Http1ToH2ReviewTest, DataAfterABodilessResponseNeverReachesTheClient) {
  gate();
  for (const std::string& first :
       {get("/bodiless/204"), get("/bodiless/304"), get("/head-data", "HEAD")}) {
    const std::string got = raw({first + get("/ok/3")}, "--together");
    EXPECT_EQ(count_of(got, "HTTP/1.1 "), 2u) << first << ": " << got;
    EXPECT_FALSE(contains(got, "smuggled")) << first << ": " << got;
    EXPECT_FALSE(contains(got, "hello")) << first << ": " << got;
    EXPECT_TRUE(contains(got, std::string(kNext) + "\\r\nooo\nopen\n")) << first << ": " << got;
  }
}

// Interim heads pass, up to the front's limit; a flood past it is the gate's 502 saying so.
TEST_F(Http1ToH2ReviewTest, InterimHeadsPassUpToTheLimitAndAFloodIsA502) {
  gate();
  const std::string three = raw({get("/interim/3")});
  EXPECT_EQ(count_of(three, "HTTP/1.1 103 Early Hints\\r\n"), 3u) << three;
  EXPECT_TRUE(contains(three, "\\r\n\\r\nafter 3\nopen")) << three;
  const std::string flood = raw({get("/interim/40")});
  // (The front passes the 33rd on before it counts one too many.)
  EXPECT_EQ(count_of(flood, "HTTP/1.1 103 Early Hints\\r\n"), 33u) << flood;
  EXPECT_TRUE(contains(flood, "HTTP/1.1 502 Bad Gateway\\r\n")) << flood;
  EXPECT_TRUE(contains(flood, "sent more than 32 interim (1xx) responses")) << flood;
}

// Trailers are dropped, and a response whose trailers carry a field trailers may not carry is
// cut (a reset, no last chunk); the next client is served.
TEST_F(Http1ToH2ReviewTest, TrailersAreDroppedAndForbiddenOnesCutTheResponse) {
  gate();
  const std::string ok = raw({get("/trailers/ok"), get("/ok/3")});
  EXPECT_TRUE(contains(ok, "0\\r\n\\r\n" + std::string(kNext))) << ok;
  EXPECT_FALSE(contains(ok, "x-checksum")) << ok;
  for (const std::string path : {"/trailers/length", "/trailers/pseudo"}) {
    const std::string cut = raw({get(path), get("/ok/3")});
    EXPECT_FALSE(contains(cut, "0\\r\n\\r\n")) << path << ": " << cut;
    EXPECT_TRUE(contains(cut, "\nclosed")) << path << ": " << cut;
  }
  EXPECT_EQ(curl(url("/ok/2")).output, "oo");
}

// The origin ends the response early (a GOAWAY that leaves the stream out, a reset, the
// connection closed): the client has what came, then a reset, never a last chunk; the end line
// says why.
TEST_F(Http1ToH2ReviewTest, AResponseTheOriginEndsEarlyIsCutAndItsLineSaysWhy) {
  gate();
  for (const std::string path : {"/goaway-mid", "/reset-mid", "/close-mid"}) {
    const std::string got = raw({get(path), get("/ok/3")});
    EXPECT_TRUE(contains(got, "transfer-encoding: chunked")) << path << ": " << got;
    EXPECT_FALSE(contains(got, "0\\r\n\\r\n")) << path << ": " << got;
    EXPECT_TRUE(contains(got, "\nclosed")) << path << ": " << got;
  }
  EXPECT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return !log_lines_with(log, {"\"event\":\"end\"", "/reset-mid",
                                 "the origin reset the HTTP/2 stream (INTERNAL_ERROR)",
                                 "\"outcome\":\"reset\""})
                .empty() &&
           !log_lines_with(
                log, {"\"event\":\"end\"", "/goaway-mid", "went away", "\"outcome\":\"reset\""})
                .empty();
  })) << proxy_->log_text();
  EXPECT_EQ(curl(url("/ok/2")).output, "oo");
}

// The request side: the front parses, the bridge carries what the front wrote. Obsolete line
// folding is refused; chunk extensions and a chunked body's trailers do not go; a body after
// `Content-Length: 0` is the next request, decided on its own; Expect: 100-continue is
// answered once and the body goes; a request pipelined behind a streamed answer gets its own;
// OPTIONS * goes as such.
TEST_F(Http1ToH2ReviewTest, TheRequestTheOriginGetsIsTheOneTheFrontRead) {
  gate();
  const std::string host = "Host: h2.test:" + std::to_string(port_) + "\\r\\n";
  EXPECT_TRUE(contains(raw({"POST /record/fold HTTP/1.1\\r\\n" + host +
                            "X-A: one\\r\\n two\\r\\nContent-Length: 2\\r\\n\\r\\nhi"}),
                       "HTTP/1.1 400 Bad Request"));
  const std::string chunked =
      raw({"POST /record/chunked HTTP/1.1\\r\\n" + host +
           "Transfer-Encoding: chunked\\r\\n\\r\\n5;ext=\"x\"\\r\\nhello\\r\\n0\\r\\n"
           "X-Trailer: evil\\r\\n\\r\\n"});
  EXPECT_TRUE(contains(chunked, "\nbody: hello\n")) << chunked;
  EXPECT_FALSE(contains(chunked, "ext=")) << chunked;
  EXPECT_FALSE(contains(chunked, "evil")) << chunked;
  const std::string after_zero = raw({"POST /record/zero HTTP/1.1\\r\\n" + host +
                                      "Content-Length: 0\\r\\n\\r\\n" + get("/record/after-zero")},
                                     "--together");
  EXPECT_EQ(count_of(after_zero, "HTTP/1.1 200 OK"), 2u) << after_zero;
  EXPECT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return !log_lines_with(log, {"\"event\":\"decision\"", "/record/after-zero"}).empty();
  })) << proxy_->log_text();
  const std::string expect = raw({"POST /record/expect HTTP/1.1\\r\\n" + host +
                                      "Expect: 100-continue\\r\\nContent-Length: 4\\r\\n\\r\\n",
                                  "body"});
  EXPECT_EQ(count_of(expect, "HTTP/1.1 100 Continue"), 1u) << expect;
  EXPECT_TRUE(contains(expect, "\nbody: body\n")) << expect;
  const std::string pipelined = raw({get("/drip/3") + get("/record/second")}, "--together");
  EXPECT_TRUE(contains(pipelined, "0\\r\n\\r\nHTTP/1.1 200 OK")) << pipelined;
  EXPECT_TRUE(origin_logged("request GET /record/second\n")) << origin_log();
  EXPECT_TRUE(contains(raw({get("*", "OPTIONS")}), "no such path")) << origin_log();
  EXPECT_TRUE(origin_logged("request OPTIONS *\n")) << origin_log();
}

// A request target HTTP/1.1's parser takes but HTTP/2 cannot carry (a byte over 0x7e): the
// client's 400 says so, and nothing reaches the origin. Before, a 502 blamed the origin for
// closing the connection.
TEST_F(Http1ToH2ReviewTest, ATargetHttp2CannotCarryIsTheClients400SayingSo) {
  gate();
  const std::string got = raw({get("/record/caf\\xe9")});
  EXPECT_EQ(got.rfind("HTTP/1.1 400 Bad Request\\r\n", 0), 0u) << got;
  EXPECT_TRUE(contains(got, "the request cannot be sent over HTTP/2: the request target")) << got;
  EXPECT_FALSE(contains(origin_log(), "/record/caf")) << origin_log();
}

// The gate's size under a slow or silent client: measured in the optimised tree only (ASan's
// quarantine and shadow memory grow the process whatever it holds); `make test` runs the suites
// named *ReleaseBuild there (tests/CMakeLists.txt, release_checks).
class Http1ToH2ReviewReleaseBuild : public Http1ToH2ReviewTest {};

// A client that reads a large response more slowly than the origin sends it: the gate holds no
// more than the stream's window, however long the response (it held every byte read since the
// response began: 300 MB down took over 100 MiB).
TEST_F(Http1ToH2ReviewReleaseBuild, AResponseReadSlowlyHoldsNoMoreThanTheWindow) {
  if (kSanitizedBuild) {
    // ASan's quarantine and shadow memory grow the gate's RSS whatever it holds: the bound is
    // measured in the optimised tree.
    GTEST_SKIP() << "measured in the optimised tree";
  }
  gate();
  constexpr long kSize = 150'000'000;
  CommandResult got;
  const long growth = resident_growth_kib([&] {
    got = curl("-o /dev/null -w '%{http_code} %{size_download}' --limit-rate 25M " +
               url("/big/" + std::to_string(kSize)));
  });
  EXPECT_EQ(got.output, "200 " + std::to_string(kSize)) << got.output;
  EXPECT_LT(growth, 16 * 1024) << "KiB";
}

// A client that reads nothing of a large response: the gate holds the stream's window and no
// more, another client of the same origin connection is served meanwhile, and once the first
// leaves its stream is reset (CANCEL) with its end line.
TEST_F(Http1ToH2ReviewReleaseBuild, AClientThatDoesNotReadHoldsTheWindowAndNoMore) {
  if (kSanitizedBuild) {
    // ASan's quarantine and shadow memory grow the gate's RSS whatever it holds: the bound is
    // measured in the optimised tree.
    GTEST_SKIP() << "measured in the optimised tree";
  }
  gate();
  EXPECT_EQ(curl(url("/ok/1")).output, "o");  // (the origin connection the others share)
  std::future<CommandResult> stalled;
  const long growth = resident_growth_kib([&] {
    stalled = std::async(std::launch::async, [this] {
      return run_shell(std::string(kPeer) + "stall " + std::to_string(proxy_->port()) +
                       " h2.test " + std::to_string(port_) + " " + folder_ +
                       "/gate-ca/ca.pem /big/200000000 3");
    });
    std::this_thread::sleep_for(1500ms);
    EXPECT_EQ(curl(url("/ok/2")).output, "oo");
    stalled.wait();
  });
  EXPECT_LT(growth, 16 * 1024) << "KiB";
  EXPECT_TRUE(origin_logged("reset /big/200000000 8\n")) << origin_log();
  EXPECT_EQ(count_of(origin_log(), "connection "), 1u) << origin_log();
  EXPECT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return !log_lines_with(log, {"\"event\":\"end\"", "/big/200000000", "\"outcome\":\"reset\""})
                .empty();
  })) << proxy_->log_text();
}

// An origin that sends its body a byte per DATA frame, a million of them (its stream's window),
// to a client that reads nothing: the gate holds the window's bytes, not a piece (and its
// chunk's framing) per frame (it held 47 MiB more for them).
TEST_F(Http1ToH2ReviewReleaseBuild, TinyDataFramesToAClientThatDoesNotReadHoldNoMoreThanTheWindow) {
  if (kSanitizedBuild) {
    // ASan's quarantine and shadow memory grow the gate's RSS whatever it holds: the bound is
    // measured in the optimised tree.
    GTEST_SKIP() << "measured in the optimised tree";
  }
  gate();
  EXPECT_EQ(curl(url("/ok/1")).output, "o");  // (the origin connection, dialled and kept)
  const long growth = resident_growth_kib([&] {
    run_shell(std::string(kPeer) + "stall " + std::to_string(proxy_->port()) + " h2.test " +
              std::to_string(port_) + " " + folder_ + "/gate-ca/ca.pem /tiny/1000000 8");
  });
  EXPECT_LT(growth, 8 * 1024) << "KiB";
  EXPECT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return !log_lines_with(log, {"\"event\":\"end\"", "/tiny/1000000"}).empty();
  })) << proxy_->log_text();
}

// An origin that sends nothing, or a head and never the end: the idle timeout ends both, each
// with its line; the client of the silent one gets the gate's 502 saying so.
TEST_F(Http1ToH2ReviewTest, AnOriginThatGoesSilentIsEndedByTheIdleTimeout) {
  gate({}, 2s);
  const std::string silent = raw({get("/silent")}, "--wait 6");
  EXPECT_TRUE(contains(silent, "HTTP/1.1 502 Bad Gateway")) << silent;
  EXPECT_TRUE(contains(silent, "sent no response for 2 s")) << silent;
  const std::string begun = raw({get("/never-ends")}, "--wait 6");
  EXPECT_TRUE(contains(begun, "5\\r\nbegun\\r\n\nclosed")) << begun;
  EXPECT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return !log_lines_with(log, {"\"event\":\"end\"", "/never-ends", "\"outcome\":\"timeout\""})
                .empty();
  })) << proxy_->log_text();
  EXPECT_TRUE(origin_logged("reset /never-ends 8\n")) << origin_log();
  EXPECT_TRUE(origin_logged("reset /silent 8\n")) << origin_log();
}

// More HTTP/1.1 clients at once than the origin's SETTINGS_MAX_CONCURRENT_STREAMS (2 for
// few.test), each come once the one before has its stream: each is answered, the ones past the
// limit on a second connection. (Clients whose heads race for the last stream may find it taken
// when their head goes: they get the gate's 502 saying the connection took no new stream.)
TEST_F(Http1ToH2ReviewTest, ClientsPastTheOriginsStreamLimitAreEachAnswered) {
  gate();
  EXPECT_EQ(curl(url("/ok/1", "few.test")).output, "o");
  std::vector<std::future<CommandResult>> held;
  for (std::size_t i = 1; i <= 4; ++i) {
    held.push_back(std::async(std::launch::async, [this] {
      return curl("-w ' %{http_code}' " + url("/hold", "few.test"));
    }));
    const auto has_stream = [&] { return count_of(origin_log(), "request GET /hold\n") == i; };
    for (int wait = 0; wait < 250 && !has_stream(); ++wait) {
      std::this_thread::sleep_for(20ms);
    }
    ASSERT_TRUE(has_stream()) << origin_log();
  }
  std::ofstream(origin_log_path(), std::ios::app) << "release\n";
  for (auto& one : held) {
    EXPECT_EQ(one.get().output, "released 200");
  }
  EXPECT_EQ(count_of(origin_log(), "connection "), 2u) << origin_log();
}

// A reload that denies the host ends the exchanges under way at once, each with its revoked
// line, their streams reset: one waiting for a head that never comes, one whose body never
// comes. Before, both waited on the origin's silent stream until the idle timeout.
TEST_F(Http1ToH2ReviewTest, AReloadThatDeniesTheHostEndsTheExchangesUnderWay) {
  gate();
  auto silent = std::async(std::launch::async, [this] { return curl(url("/silent")); });
  auto held = std::async(std::launch::async, [this] { return curl(url("/hold")); });
  ASSERT_TRUE(origin_logged("request GET /silent\n")) << origin_log();
  ASSERT_TRUE(origin_logged("request GET /hold\n")) << origin_log();
  std::this_thread::sleep_for(300ms);
  std::ofstream(proxy_->folder() + "/blocked.txt", std::ios::app) << "h2.test\n";
  EXPECT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return log_lines_with(
               log, {"\"event\":\"end\"", "\"reason\":\"blocklist\"", "\"outcome\":\"revoked\""})
               .size() == 2;
  })) << proxy_->log_text();
  EXPECT_TRUE(origin_logged("reset /silent 8\n")) << origin_log();
  EXPECT_TRUE(origin_logged("reset /hold 8\n")) << origin_log();
  EXPECT_NE(silent.get().exit_code, 28 << 8);
  EXPECT_NE(held.get().exit_code, 28 << 8);
}

// A masked secret is filled in for the origin, and its real value echoed back in a field and in
// a body cut across two DATA frames 100 ms apart comes back to the client as the sentinel.
TEST_F(Http1ToH2ReviewTest, ASecretsEchoInAFieldAndAcrossDataFramesIsCleaned) {
  gate();
  const std::string masked = sentinel();
  const auto got = curl("-i -H 'Authorization: Bearer " + masked + "' " + url("/echo"));
  EXPECT_TRUE(contains(got.output, "x-echo: Bearer " + masked + "\r\n")) << got.output;
  EXPECT_TRUE(contains(got.output, "you sent Bearer " + masked + " here\n")) << got.output;
  EXPECT_FALSE(contains(got.output, "RealToken")) << got.output;
  // The origin got the real value (its echo above was cleaned, not left as it came).
  const auto recorded = curl("-H 'Authorization: Bearer " + masked + "' " + url("/record/s"));
  EXPECT_TRUE(contains(recorded.output, "authorization: Bearer " + masked)) << recorded.output;
  EXPECT_TRUE(contains(origin_log(), std::string("authorization: Bearer ") + kToken))
      << origin_log();
}

// A download past the destination's budget, its length unknown ahead: cut where the budget
// ends, with the budget's line.
TEST_F(Http1ToH2ReviewTest, ADownloadPastItsBudgetIsCutWithTheBudgetsLine) {
  gate("h2.test down=20KB/run\n");
  const auto got = curl("-o /dev/null -w '%{http_code} %{size_download}' " + url("/drip/100"));
  EXPECT_TRUE(contains(got.output, "200 ")) << got.output;
  EXPECT_TRUE(proxy_->wait_for_log([](const std::string& log) {
    return !log_lines_with(log, {"\"event\":\"end\"", "/drip/100", "budgets.txt:1",
                                 "\"outcome\":\"budget-exhausted\""})
                .empty();
  })) << proxy_->log_text();
  EXPECT_TRUE(origin_logged("reset /drip/100 8\n")) << origin_log();
}

}  // namespace
}  // namespace sandgate::testing
