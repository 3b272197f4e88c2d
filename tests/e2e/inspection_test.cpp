// Inspection end to end, with real clients from Debian against real TLS origins on loopback:
// curl through an inspected CONNECT (request rules allow GET and deny DELETE, with the gate's
// 403 and Proxy-Status inside TLS), an origin whose certificate the gate cannot verify (502,
// origin-certificate), a client that does not trust the gate's CA (client-tls-failed), a Host
// that names another server, and the real git cloning and pushing over smart HTTP through
// inspection, with fetch allowed everywhere and push only to one organisation.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "proxy/metrics/prometheus.hpp"
#include "rules/reason.hpp"
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

// A throw-away CA and a certificate for origin.test (and git.test) signed by it.
// The origins' CA (FOLDER/ca.pem, which the gate is told to trust) and their certificate.
void make_origin_ca(const std::string& folder) {
  make_test_certificates(folder, {"DNS:origin.test", "DNS:git.test"}, "origin-test-ca");
}

// `openssl s_server -www` on 127.0.0.1:`port` with the certificate make_origin_ca() made.
std::string s_server(const std::string& folder, std::uint16_t port) {
  return "openssl s_server -quiet -www -accept 127.0.0.1:" + std::to_string(port) + " -cert " +
         folder + "/server.pem -key " + folder + "/server.key";
}

// tests/support/git_https_server.py on 127.0.0.1:`port` with that certificate, serving the
// repositories under `root` (and counting its connections).
std::string git_server(const std::string& folder, std::uint16_t port, const std::string& root) {
  return "python3 " SANDGATE_SOURCE_DIR "/tests/support/git_https_server.py " +
         std::to_string(port) + " " + folder + "/server.pem " + folder + "/server.key " + root;
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A gate that inspects, with its request rules in `rules`, trusting the origins' test CA.
std::unique_ptr<TestProxy> inspecting_gate(const std::string& folder, const std::string& rules,
                                           std::uint16_t origin_port, bool trust_origin = true,
                                           bool allow_ip = false,
                                           std::chrono::seconds idle_timeout = {}) {
  write_file(folder + "/requests.txt", rules);
  auto proxy = std::make_unique<TestProxy>("", [&](settings::Settings& s) {
    s.policy.block_loopback = false;  // the test origins are on loopback
    s.tls_ports = {origin_port};
    s.request_rules_path = folder + "/requests.txt";
    s.ca_dir = folder + "/gate-ca";
    s.policy.allow_ip = allow_ip;
    s.idle_timeout = idle_timeout;
    if (trust_origin) {
      s.inspect_extra_ca = {folder + "/ca.pem"};
    }
  });
  proxy->dns().set("origin.test", {"127.0.0.1"});
  proxy->dns().set("git.test", {"127.0.0.1"});
  return proxy;
}

std::string curl_through(const TestProxy& proxy, const std::string& folder) {
  return "curl -sS --max-time 20 --noproxy '' --cacert " + folder +
         "/gate-ca/ca.pem -x http://127.0.0.1:" + std::to_string(proxy.port()) + " ";
}

// The start of a Python client that asks the gate for a tunnel to origin.test:`port` and
// speaks TLS in it trusting the gate's CA: the TLS socket is `t`.
std::string tls_client_through(const TestProxy& proxy, std::uint16_t port,
                               const std::string& folder) {
  return "import socket, ssl\n"
         "s = socket.create_connection(('127.0.0.1', " +
         std::to_string(proxy.port()) +
         "))\n"
         "s.sendall(b'CONNECT origin.test:" +
         std::to_string(port) +
         " HTTP/1.1\\r\\nHost: origin.test\\r\\n\\r\\n')\n"
         "assert b' 200 ' in s.recv(4096)\n"
         "c = ssl.create_default_context(cafile='" +
         folder +
         "/gate-ca/ca.pem')\n"
         "t = c.wrap_socket(s, server_hostname='origin.test')\n";
}

// How many decisions /metrics counts under `reason` (enforced), 0 when it has no series yet.
std::uint64_t counted(TestProxy& proxy, rules::Reason reason) {
  const rules::ReasonInfo& row = rules::reason_info(reason);
  const std::string text = metrics::render_prometheus(proxy.server().worker_metrics(), {});
  const std::string series = "sandgate_decisions_total{verdict=\"" +
                             std::string(rules::verdict_name(row.verdict)) + "\",reason=\"" +
                             std::string(row.code) + "\",enforced=\"true\"} ";
  const auto at = text.find(series);
  return at == std::string::npos ? 0 : std::stoull(text.substr(at + series.size()));
}

class InspectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/inspection-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    make_origin_ca(folder_);
  }
  void TearDown() override { run_shell("rm -rf " + folder_); }
  std::string folder_;
};

TEST_F(InspectionTest, CurlGetsAllowedRequestsAndTheGatesDenialInsideTls) {
  const std::uint16_t port = free_port();
  ChildServer origin(port, s_server(folder_, port));
  ASSERT_TRUE(port_accepts(port)) << "openssl s_server did not start";
  auto proxy = inspecting_gate(folder_,
                               "deny  origin.test DELETE  #! nothing is deleted here\n"
                               "allow origin.test GET /**\n",
                               port);
  const std::string url = "https://origin.test:" + std::to_string(port);

  // A GET: inspected, allowed by the rule, answered by the origin.
  auto allowed = run_shell(curl_through(*proxy, folder_) + url + "/status");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
  EXPECT_NE(allowed.output.find("s_server"), std::string::npos) << allowed.output;
  // A second connection: the gate resumes its session with the origin instead of a full
  // handshake (s_server's page says which it was).
  auto again = run_shell(curl_through(*proxy, folder_) + url + "/status");
  EXPECT_NE(again.output.find("Reused, TLSv1.3"), std::string::npos) << again.output;
  // The certificate curl accepted is the gate's, for the host.
  struct stat key {};
  ASSERT_EQ(::stat((folder_ + "/gate-ca/ca-key.pem").c_str(), &key), 0);
  EXPECT_EQ(key.st_mode & 0777, 0600u);

  // A DELETE: refused by the gate inside the TLS connection, with a reason curl can show.
  auto denied = run_shell(curl_through(*proxy, folder_) + "-i -X DELETE " + url + "/thing");
  EXPECT_EQ(denied.exit_code, 0) << denied.output;
  EXPECT_NE(denied.output.find("HTTP/1.1 403"), std::string::npos) << denied.output;
  EXPECT_NE(denied.output.find("Proxy-Status: sandgate; error=http_request_denied"),
            std::string::npos)
      << denied.output;
  EXPECT_NE(denied.output.find("nothing is deleted here"), std::string::npos) << denied.output;

  // POST: the host's rules allow GET only.
  auto other = run_shell(curl_through(*proxy, folder_) + "-i -d x=1 " + url + "/form");
  EXPECT_NE(other.output.find("HTTP/1.1 403"), std::string::npos) << other.output;

  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log.find("\"method\":\"GET\"") != std::string::npos &&
           log.find("\"path\":\"/status\"") != std::string::npos &&
           log.find("\"reason\":\"request-denied\"") != std::string::npos &&
           log.find("\"path\":\"/thing\"") != std::string::npos &&
           log.find("\"reason\":\"request-not-allowed\"") != std::string::npos;
  })) << proxy->log_text();
  // Each inspected request is counted under its own reason, as every decision is.
  EXPECT_GE(counted(*proxy, rules::Reason::allowed), 1u);
  EXPECT_EQ(counted(*proxy, rules::Reason::request_denied), 1u);
  EXPECT_EQ(counted(*proxy, rules::Reason::request_not_allowed), 1u);
}

TEST_F(InspectionTest, AnOriginTheGateCannotVerifyIsRefusedWithItsSubject) {
  const std::uint16_t port = free_port();
  ChildServer origin(port, s_server(folder_, port));
  ASSERT_TRUE(port_accepts(port));
  // The gate does not trust the origin's CA: it must not talk to it.
  auto proxy = inspecting_gate(folder_, "allow origin.test *\n", port, false);
  auto reply = run_shell(curl_through(*proxy, folder_) +
                         "-i https://origin.test:" + std::to_string(port) + "/");
  EXPECT_NE(reply.output.find("HTTP/1.1 502"), std::string::npos) << reply.output;
  EXPECT_NE(reply.output.find("error=tls_certificate_error"), std::string::npos) << reply.output;
  EXPECT_EQ(reply.output.find("s_server"), std::string::npos) << reply.output;
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log.find("\"reason\":\"origin-certificate\"") != std::string::npos &&
           log.find("CN = origin.test") != std::string::npos;
  })) << proxy->log_text();
  EXPECT_EQ(counted(*proxy, rules::Reason::origin_certificate), 1u);
}

TEST_F(InspectionTest, AClientThatDoesNotTrustTheGateEndsWithItsReasonAndAHostMismatchIsRefused) {
  const std::uint16_t port = free_port();
  ChildServer origin(port, s_server(folder_, port));
  ASSERT_TRUE(port_accepts(port));
  auto proxy = inspecting_gate(folder_, "allow origin.test *\n", port);
  const std::string url = "https://origin.test:" + std::to_string(port) + "/";
  // curl trusting only the origin's CA sees the gate's certificate and refuses it.
  auto untrusting =
      run_shell("curl -sS --max-time 20 --noproxy '' --cacert " + folder_ +
                "/ca.pem -x http://127.0.0.1:" + std::to_string(proxy->port()) + " " + url);
  EXPECT_NE(untrusting.exit_code, 0) << untrusting.output;
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log.find("\"reason\":\"client-tls-failed\"") != std::string::npos;
  })) << proxy->log_text();

  // A Host naming another server than the tunnel's (domain fronting) is refused.
  auto fronted = run_shell(curl_through(*proxy, folder_) + "-i -H 'Host: elsewhere.test' " + url);
  EXPECT_NE(fronted.output.find("HTTP/1.1 400"), std::string::npos) << fronted.output;
  EXPECT_EQ(fronted.output.find("s_server"), std::string::npos) << fronted.output;
}

// What the gate cannot inspect does not reach a host with request rules: a tunnel to another
// port (plain HTTP through CONNECT), SSH; and the gate's own refusals of a malformed head inside
// an inspected connection are sent inside its TLS.
TEST_F(InspectionTest, TunnelsThatCannotBeInspectedAreRefusedAndRefusalsStayInsideTls) {
  const std::uint16_t port = free_port();
  ChildServer origin(port, s_server(folder_, port));
  ASSERT_TRUE(port_accepts(port));
  auto proxy = inspecting_gate(folder_, "allow origin.test GET\n", port);
  // A tunnel to another port of the host: its requests could not be judged.
  auto tunnelled = run_shell(curl_through(*proxy, folder_) +
                             "-p -i http://origin.test:" + std::to_string(free_port()) + "/x");
  EXPECT_NE(tunnelled.output.find("403"), std::string::npos) << tunnelled.output;
  EXPECT_NE(tunnelled.output.find("not-inspectable"), std::string::npos) << tunnelled.output;
  // SSH to it (a git host): refused too.
  auto ssh = run_shell(
      "printf 'CONNECT origin.test:22 HTTP/1.1\\r\\nHost: origin.test:22\\r\\n\\r\\n' | "
      "timeout 10 nc -q 5 127.0.0.1 " +
      std::to_string(proxy->port()));
  EXPECT_NE(ssh.output.find("403"), std::string::npos) << ssh.output;

  // An IP-literal tunnel whose ClientHello names the host is inspected as the host.
  auto ip_gate = inspecting_gate(folder_, "allow origin.test GET\n", port, true, true);
  const std::string to_ip = "--connect-to origin.test:" + std::to_string(port) +
                            ":127.0.0.1:" + std::to_string(port) + " ";
  auto by_address = run_shell(curl_through(*ip_gate, folder_) + to_ip +
                              "-i -X DELETE https://origin.test:" + std::to_string(port) + "/x");
  EXPECT_NE(by_address.output.find("HTTP/1.1 403"), std::string::npos) << by_address.output;
  EXPECT_NE(by_address.output.find("request-not-allowed"), std::string::npos) << by_address.output;

  // A bare LF inside the inspected connection: the 400 comes back encrypted.
  const std::string python =
      tls_client_through(*proxy, port, folder_) +
      "t.sendall(b'GET / HTTP/1.1\\nHost: origin.test:" + std::to_string(port) +
      "\\n\\n')\n"
      "print(t.recv(4096).split(b'\\r\\n')[0].decode())\n";
  write_file(folder_ + "/bare_lf.py", python);
  auto bare = run_shell("/usr/bin/python3 " + folder_ + "/bare_lf.py 2>&1");
  EXPECT_NE(bare.output.find("HTTP/1.1 400"), std::string::npos) << bare.output;
}

// A connection opened to an address stays one whatever its requests name: a reload that turns
// --allow-ip off closes it after its first request too (what it registers for reloads is the
// tunnel's destination, not the last request's host), and with revocation off its next request
// is refused, as a new tunnel to the address would be.
TEST_F(InspectionTest, AConnectionToAnAddressIsJudgedAsOneOnEveryRequestAndReload) {
  const std::uint16_t port = free_port();
  ChildServer origin(port, "python3 " SANDGATE_SOURCE_DIR "/tests/support/echo_https_server.py " +
                               std::to_string(port) + " " + folder_ + "/server.pem " + folder_ +
                               "/server.key unused");
  ASSERT_TRUE(port_accepts(port)) << "the echo origin did not start";
  // Two requests on one connection to 127.0.0.1 (its ClientHello naming origin.test); between
  // them the script says `first` is answered and waits for the test's `go`.
  const std::string script = folder_ + "/two_requests.py";
  write_file(
      script,
      "import os, socket, ssl, sys, time\n"
      "gate, port, ca, folder = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]\n"
      "s = socket.create_connection(('127.0.0.1', gate))\n"
      "s.sendall(('CONNECT 127.0.0.1:%s HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' % "
      "port).encode())\n"
      "assert b' 200 ' in s.recv(4096)\n"
      "t = ssl.create_default_context(cafile=ca).wrap_socket(s, "
      "server_hostname='origin.test')\n"
      "t.settimeout(10)\n"
      "def ask(path):\n"
      "    data = b''\n"
      "    try:\n"
      "        t.sendall(('GET %s HTTP/1.1\\r\\nHost: origin.test:%s\\r\\n\\r\\n' "
      "% (path, port)).encode())\n"
      "        while (b'GET ' + path.encode()) not in data and b'HTTP/1.1 403' not in data:\n"
      "            more = t.recv(65536)\n"
      "            if not more: break\n"
      "            data += more\n"
      "    except Exception as e:\n"
      "        data += repr(e).encode()\n"
      "    print(path, data.decode(errors='replace'))\n"
      "ask('/first')\n"
      "open(folder + '/first', 'w').close()\n"
      "while not os.path.exists(folder + '/go'): time.sleep(0.05)\n"
      "time.sleep(0.3)\n"
      "ask('/second')\n");
  for (const bool revoke : {true, false}) {
    auto proxy = inspecting_gate(folder_, "allow origin.test GET\n", port, true, true);
    run_shell("rm -f " + folder_ + "/first " + folder_ + "/go");
    std::string output;
    std::thread client([&] {
      output =
          run_shell("/usr/bin/python3 " + script + " " + std::to_string(proxy->port()) + " " +
                    std::to_string(port) + " " + folder_ + "/gate-ca/ca.pem " + folder_ + " 2>&1")
              .output;
    });
    for (int i = 0; i < 200 && ::access((folder_ + "/first").c_str(), F_OK) != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // The reload: the same rules, with raw IP literals no longer allowed.
    const auto current = proxy->server().current_policy();
    rules::PolicyOptions options = current->options();
    options.allow_ip = false;
    auto settings = std::make_shared<settings::Settings>(proxy->settings());
    settings->policy.allow_ip = false;
    settings->revoke_on_reload = revoke;
    proxy->server().publish(std::make_shared<const rules::Policy>(
                                options, current->shared_blocklist(), current->shared_allowlist(),
                                current->shared_requests(), current->shared_budgets()),
                            settings);
    write_file(folder_ + "/go", "");
    client.join();
    EXPECT_NE(output.find("GET /first"), std::string::npos) << revoke << output;
    EXPECT_EQ(output.find("GET /second"), std::string::npos) << revoke << output;
    // Revoked, or its second request refused: either way for the address, by the new rules.
    const std::string how = revoke ? "\"outcome\":\"revoked\"" : "\"path\":\"/second\"";
    EXPECT_TRUE(proxy->wait_for_log([&how](const std::string& log) {
      return !log_lines_with(log, {how, "\"reason\":\"ip-address\""}).empty();
    })) << revoke
        << proxy->log_text();
    if (!revoke) {
      EXPECT_NE(output.find("HTTP/1.1 403"), std::string::npos) << output;
    }
  }
}

TEST_F(InspectionTest, GitFetchesFromAnywhereAndPushesOnlyToItsOrganisation) {
  if (run_shell("command -v git python3").exit_code != 0) {
    FAIL() << "git and python3 are required (scripts/install-deps.sh installs them)";
  }
  // Two bare repositories on the origin, one per organisation.
  const std::string root = folder_ + "/repos";
  auto made = run_shell("set -e; mkdir -p " + root + "/ourorg " + root + "/theirorg " + folder_ +
                        "/seed; cd " + folder_ +
                        "/seed; git init -q -b main; git -c user.name=t -c user.email=t@t commit "
                        "-q --allow-empty -m first; for o in ourorg theirorg; do git clone -q "
                        "--bare . " +
                        root + "/$o/app.git; git -C " + root +
                        "/$o/app.git config http.receivepack true; done");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const std::uint16_t port = free_port();
  ChildServer origin(port, git_server(folder_, port, root));
  ASSERT_TRUE(port_accepts(port)) << "the git server did not start";
  auto proxy = inspecting_gate(folder_,
                               "allow git.test git-fetch\n"
                               "allow git.test git-push /ourorg/*\n",
                               port);
  // GIT_SSL_CAINFO, not http.sslCAInfo: the variable wins over the setting, and a machine may
  // have it set.
  const std::string git =
      "cd " + folder_ + " && GIT_SSL_CAINFO=" + folder_ +
      "/gate-ca/ca.pem git -c http.proxy=http://127.0.0.1:" + std::to_string(proxy->port()) +
      " -c user.name=t -c user.email=t@t ";
  const std::string base = "https://git.test:" + std::to_string(port);

  // Clone from both organisations: fetching is allowed everywhere.
  auto ours = run_shell(git + "clone -q " + base + "/ourorg/app.git ours 2>&1");
  ASSERT_EQ(ours.exit_code, 0) << ours.output << proxy->log_text();
  auto theirs = run_shell(git + "clone -q " + base + "/theirorg/app.git theirs 2>&1");
  ASSERT_EQ(theirs.exit_code, 0) << theirs.output;

  // Push to ourorg: allowed, and it lands.
  auto pushed = run_shell(git + "-C ours commit -q --allow-empty -m second && " + git +
                          "-C ours push -q origin main 2>&1");
  EXPECT_EQ(pushed.exit_code, 0) << pushed.output << proxy->log_text();
  EXPECT_EQ(run_shell("git -C " + root + "/ourorg/app.git log --oneline | wc -l").output, "2\n");

  // Push to theirorg: refused by the gate, and nothing lands.
  auto refused = run_shell(git + "-C theirs commit -q --allow-empty -m second && " + git +
                           "-C theirs push -q origin main 2>&1");
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find("403"), std::string::npos) << refused.output;
  EXPECT_EQ(run_shell("git -C " + root + "/theirorg/app.git log --oneline | wc -l").output, "1\n");
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log.find("\"reason\":\"request-not-allowed\"") != std::string::npos &&
           log.find("/theirorg/app.git/info/refs") != std::string::npos;
  })) << proxy->log_text();
}

// Origins that honour a method override act on the method it names, so a request is judged as
// that method too; a request body that stalls ends its exchange with 408 (idle_timeout here;
// without it, after five minutes), so a client cannot hold an inspected connection's buffers.
TEST_F(InspectionTest, MethodOverridesAreJudgedAndAStalledBodyEndsTheExchange) {
  const std::string root = folder_ + "/repos";
  ASSERT_EQ(run_shell("mkdir -p " + root).exit_code, 0);
  const std::uint16_t port = free_port();
  // An origin that reads a request's whole body before it answers.
  ChildServer origin(port, git_server(folder_, port, root));
  ASSERT_TRUE(port_accepts(port)) << "the origin did not start";
  auto proxy = inspecting_gate(folder_,
                               "deny  origin.test DELETE  #! nothing is deleted here\n"
                               "allow origin.test GET,POST /**\n",
                               port, true, false, std::chrono::seconds{1});
  const std::string url = "https://origin.test:" + std::to_string(port) + "/thing";
  const auto status_of = [](const std::string& output) {
    const std::size_t at = output.rfind("HTTP/1.1 ");  // not the CONNECT's 200
    return at == std::string::npos ? std::string("(none)") : output.substr(at + 9, 3);
  };

  auto header =
      run_shell(curl_through(*proxy, folder_) + "-i -H 'X-HTTP-Method-Override: DELETE' " + url);
  EXPECT_EQ(status_of(header.output), "403") << header.output;
  EXPECT_NE(header.output.find("nothing is deleted here"), std::string::npos) << header.output;
  EXPECT_NE(header.output.find("through a method-override header"), std::string::npos)
      << header.output;
  auto variant =
      run_shell(curl_through(*proxy, folder_) + "-i -d x=1 -H 'X-HTTP-Method: delete' " + url);
  EXPECT_EQ(status_of(variant.output), "403") << variant.output;
  auto query =
      run_shell(curl_through(*proxy, folder_) + "-i -d x=1 '" + url + "?a=1&_method=DEL%45TE'");
  EXPECT_EQ(status_of(query.output), "403") << query.output;
  EXPECT_NE(query.output.find("through a _method parameter"), std::string::npos) << query.output;
  // Spellings origins read as an override, and values they cut down to one: judged, or refused.
  for (const std::string spelled :
       {"-H 'X_HTTP_Method_Override: DELETE' ", "-H 'x-http-method-override: DELETE, GET' ",
        "-H $'X-HTTP-Method-Override: DELETE\\xa0' "}) {
    auto odd =
        run_shell("bash -c \"" + curl_through(*proxy, folder_) + "-i " + spelled + url + "\"");
    const std::string status = status_of(odd.output);
    EXPECT_TRUE(status == "403" || status == "400") << spelled << odd.output;
  }
  for (const std::string name : {"_METHOD", ".method", "%20method", "%5Bmethod"}) {
    auto odd =
        run_shell(curl_through(*proxy, folder_) + "-i -d x=1 '" + url + "?" + name + "=DELETE'");
    EXPECT_EQ(status_of(odd.output), "403") << name << odd.output;
  }
  auto list =
      run_shell(curl_through(*proxy, folder_) + "-i -d x=1 '" + url + "?_method=DELETE,GET'");
  EXPECT_EQ(status_of(list.output), "400") << list.output;
  // Two Content-Type fields: which one an origin reads is its choice, so the gate refuses.
  auto types =
      run_shell(curl_through(*proxy, folder_) +
                "-i -H 'Content-Type: text/plain' -H 'Content-Type: text/html' -d x " + url);
  EXPECT_EQ(status_of(types.output), "400") << types.output;
  auto disagreeing = run_shell(curl_through(*proxy, folder_) +
                               "-i -H 'X-HTTP-Method-Override: GET' "
                               "-H 'X-HTTP-Method-Override: DELETE' " +
                               url);
  EXPECT_EQ(status_of(disagreeing.output), "400") << disagreeing.output;
  // An override to an allowed method changes nothing: the request reaches the origin (git's
  // backend, which has no such repository).
  auto harmless =
      run_shell(curl_through(*proxy, folder_) + "-i -H 'X-HTTP-Method-Override: GET' " + url);
  EXPECT_EQ(harmless.exit_code, 0) << harmless.output;
  EXPECT_NE(status_of(harmless.output), "(none)") << harmless.output;
  EXPECT_EQ(harmless.output.find("Proxy-Status"), std::string::npos) << harmless.output;

  // A POST whose body stops after 10 of its 100 bytes.
  const std::string python =
      tls_client_through(*proxy, port, folder_) + "import time\n" +
      "t.sendall(b'POST /upload HTTP/1.1\\r\\nHost: origin.test:" + std::to_string(port) +
      "\\r\\nContent-Length: 100\\r\\n\\r\\n0123456789')\n"
      "t.settimeout(20)\n"
      "started = time.monotonic()\n"
      "print(t.recv(4096).split(b'\\r\\n')[0].decode())\n"
      "print('after', round(time.monotonic() - started))\n";
  write_file(folder_ + "/stalled.py", python);
  auto stalled = run_shell("/usr/bin/python3 " + folder_ + "/stalled.py 2>&1");
  EXPECT_NE(stalled.output.find("HTTP/1.1 408"), std::string::npos) << stalled.output;
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log.find("\"reason\":\"request-timeout\"") != std::string::npos &&
           log.find("the request body stalled for 1 s") != std::string::npos &&
           log.find("\"path\":\"/upload\"") != std::string::npos;
  })) << proxy->log_text();

  // A POST whose body trickles in, a byte every 0.3 s: never idle for the 1 s bound, but below
  // the minimum rate once the grace (the idle bound here) is spent.
  const std::string trickle =
      tls_client_through(*proxy, port, folder_) + "import time\n" +
      "t.sendall(b'POST /trickle HTTP/1.1\\r\\nHost: origin.test:" + std::to_string(port) +
      "\\r\\nContent-Length: 100\\r\\n\\r\\n')\n"
      "started = time.monotonic()\n"
      "try:\n"
      "    for i in range(100):\n"
      "        t.sendall(b'x')\n"
      "        time.sleep(0.3)\n"
      "    print('sent all')\n"
      "except OSError:\n"
      "    pass\n"
      "t.settimeout(20)\n"
      "print(t.recv(4096).split(b'\\r\\n')[0].decode())\n"
      "print('after', round(time.monotonic() - started))\n";
  write_file(folder_ + "/trickle.py", trickle);
  auto trickled = run_shell("/usr/bin/python3 " + folder_ + "/trickle.py 2>&1");
  EXPECT_NE(trickled.output.find("HTTP/1.1 408"), std::string::npos) << trickled.output;
  EXPECT_EQ(trickled.output.find("sent all"), std::string::npos) << trickled.output;
  EXPECT_TRUE(proxy->wait_for_log([](const std::string& log) {
    return log.find("\"path\":\"/trickle\"") != std::string::npos &&
           log.find("below 500 bytes/s") != std::string::npos;
  })) << proxy->log_text();
}

// What a client fills of an inspected connection's buffer is bounded as on the proxy's own
// connections (an endless chunk extension is cut off, not held), and each client connection
// costs the origin one connection: its first request goes over the one the tunnel secured.
TEST_F(InspectionTest, AnEndlessChunkLineIsCutOffAndEachConnectionDialsTheOriginOnce) {
  const std::string root = folder_ + "/repos";
  ASSERT_EQ(run_shell("mkdir -p " + root).exit_code, 0);
  const std::uint16_t port = free_port();
  ChildServer origin(port, git_server(folder_, port, root));
  ASSERT_TRUE(port_accepts(port)) << "the origin did not start";
  auto proxy = inspecting_gate(folder_, "allow origin.test *\n", port);
  const std::string url = "https://origin.test:" + std::to_string(port);
  for (int i = 0; i < 3; ++i) {
    auto fetched = run_shell(curl_through(*proxy, folder_) + url + "/nothing-here");
    EXPECT_EQ(fetched.exit_code, 0) << fetched.output;
  }
  // One origin connection for the four client connections: the first is dialled once (not a
  // second time for its first request), then kept idle for the next client.
  auto counted = run_shell(curl_through(*proxy, folder_) + url + "/connections");
  EXPECT_EQ(counted.output, "1") << counted.output;

  const std::string python = tls_client_through(*proxy, port, folder_) +
                             "t.settimeout(20)\n"
                             "t.sendall(b'POST /upload HTTP/1.1\\r\\nHost: origin.test:" +
                             std::to_string(port) +
                             "\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n1;a=')\n"
                             "sent = 0\n"
                             "try:\n"
                             "    while sent < 32 * 1024 * 1024:\n"
                             "        t.sendall(b'a' * 65536)\n"
                             "        sent += 65536\n"
                             "    print('sent all')\n"
                             "except Exception as e:\n"
                             "    print('cut after', sent, type(e).__name__)\n";
  write_file(folder_ + "/endless.py", python);
  auto endless = run_shell("/usr/bin/python3 " + folder_ + "/endless.py 2>&1");
  EXPECT_NE(endless.output.find("cut after"), std::string::npos) << endless.output;
  EXPECT_EQ(endless.output.find("sent all"), std::string::npos) << endless.output;
}

// The idle origin connections the gate keeps between client connections (origin_pool.hpp),
// counted by the origin: reused by the next client of the same host:port, never by another
// host's; not after a request that may have authenticated the connection itself (NTLM and the
// like, however spelled), a request with a body, or a HEAD; never one a client reached by IP
// address; dropped when the origin closes it while idle; forgotten by a reload.
TEST_F(InspectionTest, IdleOriginConnectionsAreReusedOnlyWhereTheyMayBe) {
  const std::string root = folder_ + "/repos";
  ASSERT_EQ(run_shell("mkdir -p " + root).exit_code, 0);
  const std::uint16_t port = free_port();
  ChildServer origin(port, git_server(folder_, port, root));
  ASSERT_TRUE(port_accepts(port)) << "the origin did not start";
  auto proxy =
      inspecting_gate(folder_, "allow origin.test *\nallow git.test *\n", port, true, true);
  const std::string at = ":" + std::to_string(port);
  const auto get = [&](const std::string& host, const std::string& path,
                       const std::string& options = {}) {
    auto got = run_shell(curl_through(*proxy, folder_) + options + " https://" + host + at + path);
    EXPECT_EQ(got.exit_code, 0) << host << path << ": " << got.output;
    return got.output;
  };
  const auto connections = [&](const std::string& host) { return get(host, "/connections"); };

  get("origin.test", "/nothing-here");
  EXPECT_EQ(connections("origin.test"), "1");  // the next client took it
  EXPECT_EQ(connections("git.test"), "2");     // another host: its own connection
  EXPECT_EQ(connections("origin.test"), "2");  // origin.test's was kept meanwhile

  // Schemes that may authenticate the connection, not the request, in any spelling: the
  // connection is not handed to the next client.
  int dialled = 2;
  for (const std::string scheme :
       {"NTLM\\tTlRMTVNTUAABAAAAB4IIogAAAAAAAAAAAAAAAAAAAAAGAbEdAAAADw==", "Kerberos YIIC",
        "negotiate YIIC", "CredSSP x", "Custom x"}) {
    get("origin.test", "/nothing-here", "-H \"$(printf 'Authorization: " + scheme + "')\"");
    EXPECT_EQ(connections("origin.test"), std::to_string(++dialled)) << scheme;
  }
  // A bearer token authenticates its request only: kept.
  get("origin.test", "/nothing-here", "-H 'Authorization: Bearer abc'");
  EXPECT_EQ(connections("origin.test"), std::to_string(dialled));
  // After a request with a body (an origin may read less of it than it should) or a HEAD (an
  // origin may send a body late): not kept.
  get("origin.test", "/nothing-here", "-d x=1");
  EXPECT_EQ(connections("origin.test"), std::to_string(++dialled));
  get("origin.test", "/connections", "-I");
  EXPECT_EQ(connections("origin.test"), std::to_string(++dialled));

  // The origin closes the connection after answering, without saying it would: the next client
  // is not given the dead connection.
  get("origin.test", "/close-after");
  EXPECT_EQ(connections("origin.test"), std::to_string(++dialled));

  // A client that asked for the address (its ClientHello naming origin.test) gets a connection
  // of its own, which is not kept for the clients that ask for the name.
  const std::string python = tls_client_through(*proxy, port, folder_) +
                             "t.sendall(b'GET /connection HTTP/1.1\\r\\nHost: origin.test" + at +
                             "\\r\\nConnection: close\\r\\n\\r\\n')\n"
                             "t.settimeout(20)\n"
                             "reply = b''\n"
                             "while True:\n"
                             "    piece = t.recv(4096)\n"
                             "    if not piece: break\n"
                             "    reply += piece\n"
                             "print(reply.split(b'\\r\\n\\r\\n', 1)[1].decode())\n";
  std::string by_address = python;
  by_address.replace(by_address.find("CONNECT origin.test"), 19, "CONNECT 127.0.0.1");
  write_file(folder_ + "/by_address.py", by_address);
  auto address = run_shell("/usr/bin/python3 " + folder_ + "/by_address.py 2>&1");
  EXPECT_EQ(address.output, std::to_string(++dialled) + "\n");
  EXPECT_EQ(get("origin.test", "/connection"), std::to_string(dialled - 1));

  // A reload (new rules, perhaps new CAs or a new parent): nothing kept from before it is used.
  const auto before = proxy->log_text().size();
  write_file(folder_ + "/requests.txt", "allow origin.test *\nallow git.test *\n# changed\n");
  proxy->gate().reload();
  ASSERT_TRUE(proxy->wait_for_log([&](const std::string& text) {
    return text.size() > before && text.find("requests.txt", before) != std::string::npos;
  })) << proxy->log_text();
  EXPECT_EQ(connections("origin.test"), std::to_string(++dialled));
  EXPECT_EQ(connections("origin.test"), std::to_string(dialled));
}

}  // namespace
}  // namespace sandgate::testing
