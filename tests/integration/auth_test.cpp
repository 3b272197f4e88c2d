// Client authentication (SANDGATE_TOKEN) through a real in-process sandgate on loopback, real
// sockets: no credentials or wrong ones get 407 with the challenge and a Proxy-Status, the right
// token opens tunnels and forwards plain HTTP, every request of a kept-alive connection is
// checked, the header never reaches the origin, denials are logged and counted with their
// reason. The parser: tests/unit/proxy/session/proxy_authorization_test.cpp; the real curl,
// sandgate-connect and executable: tests/e2e/auth_e2e_test.cpp.
#include <gtest/gtest.h>

#include <array>
#include <boost/beast/http/fields.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "connect-proxy/connect_request.hpp"
#include "proxy/metrics/metrics.hpp"
#include "proxy/session/fronts/client_session.hpp"
#include "tests/fakes/http_origin.hpp"
#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"

namespace sandgate::testing {
namespace {

namespace http = boost::beast::http;
using fakes::HttpOrigin;
using fakes::TcpOrigin;

const std::string kToken = "tok-5f1e2d3c4b5a69788796a5b4";

std::string basic(std::string_view credentials) {
  return "Basic " + connect_proxy::encode_base64(credentials);
}

// ---- A running gate that requires the token ----

void with_token(settings::Settings& s) {
  s.policy.block_loopback = false;  // the test origins are on loopback
  s.token = kToken;
}

std::string connect_request(std::string_view target, std::string_view extra = "") {
  return "CONNECT " + std::string(target) + " HTTP/1.1\r\nHost: " + std::string(target) + "\r\n" +
         std::string(extra) + "\r\n";
}

std::uint64_t denials(TestProxy& proxy, std::string_view reason) {
  std::uint64_t total = 0;
  for (const auto* worker : proxy.server().worker_metrics()) {
    total += worker->decisions[metrics::reason_index(reason)][1].get();
  }
  return total;
}

TEST(ProxyAuth, NoCredentialsGet407WithTheChallenge) {
  TcpOrigin origin;
  TestProxy proxy("", with_token);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string target = "origin.test:" + std::to_string(origin.port());

  TestClient client(proxy.port());
  client.send(connect_request(target));
  const ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 407) << head.head;
  EXPECT_NE(head.head.find("HTTP/1.1 407 Proxy Authentication Required\r\n"), std::string::npos);
  EXPECT_NE(head.head.find("\r\nProxy-Authenticate: Basic realm=\"sandgate\"\r\n"),
            std::string::npos)
      << head.head;
  EXPECT_NE(head.head.find("\r\nConnection: close\r\n"), std::string::npos) << head.head;
  EXPECT_NE(head.proxy_status.find("sandgate; error=http_request_denied; details=\"auth-required: "
                                   "this gate requires a token"),
            std::string::npos)
      << head.proxy_status;
  const std::string body = head.body_after + client.read_to_end();
  EXPECT_NE(body.find("sandgate: refused (auth-required): this gate requires a token"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("http://USER:TOKEN@HOST:PORT"), std::string::npos) << body;
  EXPECT_EQ(origin.connections(), 0u);
  EXPECT_EQ(proxy.dns().query_count("origin.test"), 0u) << "nothing is looked up for strangers";

  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("\"reason\":\"auth-required\"") != std::string::npos &&
           log.find("\"host\":\"origin.test\"") != std::string::npos &&
           log.find("\"verdict\":\"deny\"") != std::string::npos;
  })) << proxy.log_text();
  EXPECT_EQ(denials(proxy, "auth-required"), 1u);
}

TEST(ProxyAuth, WrongOrMalformedCredentialsGet407AuthFailed) {
  TcpOrigin origin;
  TestProxy proxy("", with_token);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string target = "origin.test:" + std::to_string(origin.port());

  const std::vector<std::pair<std::string, std::string>> cases = {
      {basic("agent:not-the-token-0123456789"), "is not this gate's token"},
      {"Bearer " + kToken, "accepts only Basic credentials"},
      {"Basic %%%%", "not valid base64"},
      {basic("no-colon-here"), "no ':' between"},
  };
  for (const auto& [value, sentence] : cases) {
    SCOPED_TRACE(value);
    TestClient client(proxy.port());
    client.send(connect_request(target, "Proxy-Authorization: " + value + "\r\n"));
    const ResponseHead head = read_response_head(client);
    EXPECT_EQ(head.status, 407) << head.head;
    EXPECT_NE(head.head.find("Proxy-Authenticate: Basic realm=\"sandgate\""), std::string::npos);
    EXPECT_NE(head.proxy_status.find("details=\"auth-failed: "), std::string::npos)
        << head.proxy_status;
    EXPECT_NE(head.proxy_status.find(sentence), std::string::npos) << head.proxy_status;
    EXPECT_EQ(head.head.find(kToken), std::string::npos) << "the token is never echoed";
  }
  // Two fields, even if one is right.
  TestClient client(proxy.port());
  client.send(connect_request(target, "Proxy-Authorization: " + basic("u:" + kToken) +
                                          "\r\nProxy-Authorization: " + basic("u:x") + "\r\n"));
  const ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 407) << head.head;
  EXPECT_NE(head.proxy_status.find("more than one Proxy-Authorization"), std::string::npos);

  EXPECT_EQ(origin.connections(), 0u);
  EXPECT_EQ(denials(proxy, "auth-failed"), cases.size() + 1);
  const std::string log = proxy.log_text();
  EXPECT_EQ(log.find(kToken), std::string::npos) << "the token is never logged";
  EXPECT_EQ(log.find(connect_proxy::encode_base64("u:" + kToken)), std::string::npos);
}

TEST(ProxyAuth, RightTokenOpensTheTunnel) {
  TcpOrigin origin;
  TestProxy proxy("", with_token);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string target = "origin.test:" + std::to_string(origin.port());

  TestClient client(proxy.port());
  client.send(connect_request(target, "Proxy-Authorization: " + basic("agent:" + kToken) + "\r\n"));
  const ResponseHead head = read_response_head(client);
  ASSERT_EQ(head.status, 200) << head.head;
  client.send("ping");
  EXPECT_EQ(client.read_exact(4), "ping");
  EXPECT_EQ(denials(proxy, "auth-required") + denials(proxy, "auth-failed"), 0u);
}

TEST(ProxyAuth, NoTokenConfiguredNeedsNoCredentials) {
  TcpOrigin origin;
  TestProxy proxy("", [](settings::Settings& s) { s.policy.block_loopback = false; });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  const ResponseHead head = send_connect(client, "origin.test:" + std::to_string(origin.port()));
  EXPECT_EQ(head.status, 200) << head.head;
}

TEST(ProxyAuth, PlainHttpNeedsTheTokenAndTheOriginNeverSeesIt) {
  HttpOrigin origin(
      [](const HttpOrigin::Request& r) { return HttpOrigin::Reply::fixed(200, "hi " + r.target); });
  TestProxy proxy("", with_token);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string url = "http://origin.test:" + std::to_string(origin.port()) + "/x";

  {
    TestClient client(proxy.port());
    client.send("GET " + url + " HTTP/1.1\r\nHost: origin.test\r\n\r\n");
    const ResponseHead head = read_response_head(client);
    EXPECT_EQ(head.status, 407) << head.head;
    EXPECT_NE(head.head.find("Proxy-Authenticate: Basic realm=\"sandgate\""), std::string::npos);
  }
  EXPECT_EQ(origin.connections(), 0u);

  TestClient client(proxy.port());
  client.send("GET " + url + " HTTP/1.1\r\nHost: origin.test\r\nProxy-Authorization: " +
              basic("agent:" + kToken) + "\r\n\r\n");
  const ResponseHead head = read_response_head(client);
  ASSERT_EQ(head.status, 200) << head.head;
  ASSERT_TRUE(origin.wait_for_requests(1));
  const auto received = origin.requests().at(0);
  EXPECT_FALSE(received.has_field("Proxy-Authorization")) << received.head;
  EXPECT_EQ(received.head.find(connect_proxy::encode_base64("agent:" + kToken)), std::string::npos);
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("\"reason\":\"auth-required\"") != std::string::npos &&
           log.find("\"method\":\"GET\"") != std::string::npos &&
           log.find("\"verdict\":\"allow\"") != std::string::npos;
  })) << proxy.log_text();
}

// Every request of a kept-alive connection must carry the token, not only the first. The check
// runs in client_session.cpp for a connection's first request; the requests after it are read
// by the plain-HTTP loop in http_forward.cpp, which must call session::authorize_request() on
// each head it reads.
TEST(ProxyAuth, EveryRequestOnAKeptAliveConnectionNeedsTheToken) {
  HttpOrigin origin([](const HttpOrigin::Request&) { return HttpOrigin::Reply::fixed(200, "ok"); });
  TestProxy proxy("", with_token);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string url = "http://origin.test:" + std::to_string(origin.port()) + "/";
  TestClient client(proxy.port());
  client.send("GET " + url + " HTTP/1.1\r\nHost: origin.test\r\nProxy-Authorization: " +
              basic("u:" + kToken) + "\r\n\r\n");
  ResponseHead head = read_response_head(client);
  ASSERT_EQ(head.status, 200) << head.head;
  client.pending = head.body_after;
  EXPECT_EQ(client.read_exact(2), "ok");
  // The same connection, no credentials this time.
  client.send("GET " + url + " HTTP/1.1\r\nHost: origin.test\r\n\r\n");
  head = read_response_head(client);
  EXPECT_EQ(head.status, 407) << head.head;
  EXPECT_EQ(origin.requests().size(), 1u);
  // And a CONNECT after plain requests is checked too.
  TestClient second(proxy.port());
  second.send("GET " + url + " HTTP/1.1\r\nHost: origin.test\r\nProxy-Authorization: " +
              basic("u:" + kToken) + "\r\n\r\n");
  head = read_response_head(second);
  ASSERT_EQ(head.status, 200) << head.head;
  second.pending = head.body_after;
  EXPECT_EQ(second.read_exact(2), "ok");
  second.send(connect_request("origin.test:" + std::to_string(origin.port())));
  head = read_response_head(second);
  EXPECT_EQ(head.status, 407) << head.head;
}

}  // namespace
}  // namespace sandgate::testing
