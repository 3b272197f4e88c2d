// Plain HTTP through a real in-process sandgate on loopback: absolute-form requests forwarded
// to a fake origin that records the raw bytes it received, so each test asserts exactly what
// went upstream and what came back: rewriting, keep-alive with the policy on every request,
// streamed bodies both ways, Expect: 100-continue, hop-by-hop fields, request-smuggling shapes,
// WebSocket upgrades, upstream failures, IPv6, and the real curl.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "rules/ascii.hpp"
#include "rules/domain_set.hpp"
#include "tests/fakes/http_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"

namespace sandgate::testing {
namespace {

using fakes::HttpOrigin;
using Reply = HttpOrigin::Reply;
using namespace std::chrono_literals;

// A proxy whose policy lets the tests reach origins on loopback by name.
void allow_loopback(settings::Settings& s) { s.policy.block_loopback = false; }

// The value of field `name` in a raw head (case-insensitive name), if present.
std::optional<std::string> field(const std::string& head, std::string_view name) {
  std::size_t at = head.find("\r\n");
  while (at != std::string::npos && at + 2 < head.size()) {
    const std::size_t start = at + 2;
    const std::size_t end = head.find("\r\n", start);
    const std::string line = head.substr(start, end - start);
    const std::size_t colon = line.find(':');
    if (colon == name.size()) {
      if (rules::ascii_iequals(std::string_view(line).substr(0, colon), name)) {
        std::size_t value = colon + 1;
        while (value < line.size() && line[value] == ' ') {
          ++value;
        }
        return line.substr(value);
      }
    }
    at = end;
  }
  return std::nullopt;
}

bool has_field(const std::string& head, std::string_view name) {
  return field(head, name).has_value();
}

// One line from the client (without its CRLF); what follows stays pending.
std::string read_line(TestClient& client) {
  std::string data = client.read_until("\r\n");
  const std::size_t end = data.find("\r\n");
  if (end == std::string::npos) {
    return data;
  }
  client.pending = data.substr(end + 2);
  return data.substr(0, end);
}

struct HttpResponse {
  int status = 0;
  std::string head;
  std::string body;          // chunk framing removed
  bool complete = false;     // the body ended as its framing says
  std::vector<int> interim;  // statuses of 1xx responses before this one
};

// Reads one response from the client connection: skips (and notes) interim responses, then
// reads the body by its framing (none for HEAD, 204, 304), leaving what follows pending.
HttpResponse read_response(TestClient& client, bool head_request = false) {
  HttpResponse response;
  for (;;) {
    ResponseHead head = read_response_head(client);
    client.pending = head.body_after;
    response.status = head.status;
    response.head = head.head;
    if (head.status >= 100 && head.status < 200 && head.status != 101) {
      response.interim.push_back(head.status);
      continue;
    }
    break;
  }
  if (response.status == 0) {
    return response;
  }
  if (head_request || response.status == 204 || response.status == 304 || response.status == 101) {
    response.complete = true;
    return response;
  }
  const auto coding = field(response.head, "Transfer-Encoding");
  const auto length = field(response.head, "Content-Length");
  if (coding && *coding == "chunked") {
    for (;;) {
      const std::string size_line = read_line(client);
      if (size_line.empty()) {
        return response;
      }
      const std::size_t size = std::strtoull(size_line.c_str(), nullptr, 16);
      if (size == 0) {
        response.complete = read_line(client).empty();
        return response;
      }
      const std::string data = client.read_exact(size + 2);
      if (data.size() != size + 2) {
        return response;
      }
      response.body += data.substr(0, size);
    }
  }
  if (length) {
    const std::size_t size = std::strtoull(length->c_str(), nullptr, 10);
    response.body = client.read_exact(size);
    response.complete = response.body.size() == size;
    return response;
  }
  response.body = client.read_to_end();
  response.complete = true;
  return response;
}

std::string url(std::string_view host, std::uint16_t port, std::string_view path = "/") {
  return "http://" + std::string(host) + ":" + std::to_string(port) + std::string(path);
}

// `METHOD url HTTP/1.1` with a Host field and `extra` fields, and an optional body.
std::string request(std::string_view method, const std::string& target, std::string_view extra = "",
                    std::string_view body = "") {
  std::string text = std::string(method) + " " + target + " HTTP/1.1\r\nHost: client.invalid\r\n";
  text += extra;
  text += "\r\n";
  text += body;
  return text;
}

std::string chunk(std::string_view data) {
  char size_line[32];
  std::snprintf(size_line, sizeof size_line, "%zx\r\n", data.size());
  return size_line + std::string(data) + "\r\n";
}

struct Fixture {
  explicit Fixture(HttpOrigin::Handler handler = {}, std::string blocklist = "")
      : origin(std::move(handler)), proxy(std::move(blocklist), allow_loopback) {
    proxy.dns().set("origin.test", {"127.0.0.1"});
    proxy.dns().set("other.test", {"127.0.0.1"});
  }
  std::string at(std::string_view path = "/") { return url("origin.test", origin.port(), path); }

  HttpOrigin origin;
  TestProxy proxy;
};

// ---------------------------------------------------------------------------------------------
// Forwarding and rewriting

TEST(HttpForward, GetIsForwardedInOriginFormWithHostFromTheUrl) {
  Fixture f([](const HttpOrigin::Request&) {
    return Reply::fixed(200, "hello", "Content-Type: text/plain\r\n");
  });
  TestClient client(f.proxy.port());
  client.send("GET " + f.at("/path/x?q=1&r=%20") +
              " HTTP/1.1\r\nHost: somewhere.else\r\nUser-Agent: test\r\nAccept: */*\r\n\r\n");
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 200) << response.head;
  EXPECT_EQ(response.body, "hello");
  EXPECT_EQ(field(response.head, "Via"), "1.1 sandgate");
  EXPECT_EQ(field(response.head, "Content-Type"), "text/plain");

  ASSERT_TRUE(f.origin.wait_for_requests(1));
  const auto requests = f.origin.requests();
  const std::string port = std::to_string(f.origin.port());
  EXPECT_EQ(requests[0].raw,
            "GET /path/x?q=1&r=%20 HTTP/1.1\r\nHost: origin.test:" + port +
                "\r\nUser-Agent: test\r\nAccept: */*\r\nVia: 1.1 sandgate\r\n\r\n");

  EXPECT_TRUE(f.proxy.wait_for_log([&](const std::string& log) {
    return log.find("\"event\":\"decision\"") != std::string::npos &&
           log.find("\"method\":\"GET\"") != std::string::npos &&
           log.find("\"host\":\"origin.test\"") != std::string::npos &&
           log.find("\"verdict\":\"allow\"") != std::string::npos &&
           log.find("\"address\":\"127.0.0.1:" + port + "\"") != std::string::npos &&
           log.find("\"event\":\"end\"") != std::string::npos &&
           log.find("\"outcome\":\"closed\"") != std::string::npos;
  })) << f.proxy.log_text();
}

TEST(HttpForward, SchemeIsCaseInsensitiveAndDefaultPortIsOmittedFromHost) {
  Fixture f;
  TestClient client(f.proxy.port());
  client.send(request("GET", "HTTP://Origin.Test:" + std::to_string(f.origin.port()) + "?x"));
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 200) << response.head;
  ASSERT_TRUE(f.origin.wait_for_requests(1));
  EXPECT_TRUE(f.origin.requests()[0].raw.starts_with("GET /?x HTTP/1.1\r\n"));
}

TEST(HttpForward, KeepAliveCarriesThreeRequestsOverOneUpstreamConnection) {
  Fixture f([](const HttpOrigin::Request& r) { return Reply::fixed(200, "got " + r.target); });
  TestClient client(f.proxy.port());
  for (int i = 1; i <= 3; ++i) {
    client.send(request("GET", f.at("/r" + std::to_string(i))));
    HttpResponse response = read_response(client);
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.body, "got /r" + std::to_string(i));
    EXPECT_FALSE(has_field(response.head, "Connection")) << response.head;
  }
  EXPECT_EQ(f.origin.connections(), 1u) << "the upstream connection is reused";
  EXPECT_TRUE(f.proxy.wait_for_log([](const std::string& log) {
    std::size_t decisions = 0;
    for (std::size_t at = log.find("\"event\":\"decision\""); at != std::string::npos;
         at = log.find("\"event\":\"decision\"", at + 1)) {
      ++decisions;
    }
    return decisions == 3;
  })) << f.proxy.log_text();
}

TEST(HttpForward, KeepAliveAppliesThePolicyToEveryRequest) {
  Fixture f({}, "blocked.test\n");
  f.proxy.dns().set("blocked.test", {"127.0.0.1"});
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at("/first")));
  EXPECT_EQ(read_response(client).status, 200);

  client.send(request("GET", url("blocked.test", f.origin.port(), "/second")));
  HttpResponse denied = read_response(client);
  EXPECT_EQ(denied.status, 403) << denied.head;
  EXPECT_NE(denied.head.find("Proxy-Status: sandgate; error=http_request_denied; "
                             "details=\"blocklist: blocked.test is blocked"),
            std::string::npos)
      << denied.head;
  EXPECT_EQ(field(denied.head, "Connection"), "close");
  EXPECT_EQ(client.read_to_end(), "") << "the connection closes after a denial";
  EXPECT_EQ(f.origin.requests().size(), 1u);
  EXPECT_EQ(f.proxy.dns().query_count("blocked.test"), 0u);
}

TEST(HttpForward, AnotherHostOnTheSameConnectionGetsItsOwnUpstream) {
  Fixture f([](const HttpOrigin::Request& r) { return Reply::fixed(200, r.field("Host")); });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at()));
  EXPECT_EQ(read_response(client).body, "origin.test:" + std::to_string(f.origin.port()));
  client.send(request("GET", url("other.test", f.origin.port())));
  EXPECT_EQ(read_response(client).body, "other.test:" + std::to_string(f.origin.port()));
  EXPECT_EQ(f.origin.connections(), 2u);
}

TEST(HttpForward, UpstreamClosedBetweenRequestsIsRedialled) {
  Fixture f([](const HttpOrigin::Request&) {
    Reply reply = Reply::fixed(200, "once");
    reply.close = true;  // closes without saying so
    return reply;
  });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at()));
  EXPECT_EQ(read_response(client).body, "once");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  client.send(request("GET", f.at()));
  HttpResponse second = read_response(client);
  EXPECT_EQ(second.status, 200) << second.head;
  EXPECT_EQ(f.origin.connections(), 2u);
}

TEST(HttpForward, ClientConnectionCloseIsHonoured) {
  Fixture f;
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at(), "Connection: close\r\n"));
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(field(response.head, "Connection"), "close");
  EXPECT_EQ(client.read_to_end(), "");
}

TEST(HttpForward, ConnectAfterPlainRequestsOpensATunnel) {
  Fixture f([](const HttpOrigin::Request& r) { return Reply::fixed(200, "via " + r.target); });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at("/plain")));
  EXPECT_EQ(read_response(client).body, "via /plain");
  const std::string authority = "origin.test:" + std::to_string(f.origin.port());
  ResponseHead established = send_connect(client, authority);
  ASSERT_EQ(established.status, 200) << established.head;
  // Inside the tunnel the request is origin-form and reaches the origin untouched.
  client.send("GET /tunnelled HTTP/1.1\r\nHost: " + authority + "\r\n\r\n");
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.body, "via /tunnelled");
  EXPECT_FALSE(has_field(response.head, "Via")) << "nothing added inside a tunnel";
}

TEST(HttpForward, PipelinedRequestsAreAnsweredInOrder) {
  Fixture f([](const HttpOrigin::Request& r) { return Reply::fixed(200, r.target); });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at("/a")) + request("GET", f.at("/b")));
  EXPECT_EQ(read_response(client).body, "/a");
  EXPECT_EQ(read_response(client).body, "/b");
}

TEST(HttpForward, Http10ClientGetsAnUnchunkedBodyAndAClose) {
  Fixture f([](const HttpOrigin::Request&) { return Reply::chunked({"abc", "def"}); });
  TestClient client(f.proxy.port());
  client.send("GET " + f.at() + " HTTP/1.0\r\n\r\n");
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 200);
  EXPECT_FALSE(has_field(response.head, "Transfer-Encoding")) << response.head;
  EXPECT_EQ(response.body, "abcdef");
}

TEST(HttpForward, ResponseFramedByCloseIsRelayedThenClosed) {
  Fixture f([](const HttpOrigin::Request&) {
    Reply reply;
    reply.head = "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n";
    reply.body = "until the end";
    reply.close = true;
    return reply;
  });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at()));
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 200);
  EXPECT_TRUE(response.head.starts_with("HTTP/1.1 200 OK\r\n")) << response.head;
  EXPECT_EQ(field(response.head, "Connection"), "close");
  EXPECT_EQ(response.body, "until the end");
}

TEST(HttpForward, HeadResponseHasNoBodyAndTheConnectionGoesOn) {
  Fixture f([](const HttpOrigin::Request& r) {
    if (r.method == "HEAD") {
      Reply reply;
      reply.head = "HTTP/1.1 200 OK\r\nContent-Length: 12345\r\n\r\n";
      return reply;
    }
    return Reply::fixed(200, "after");
  });
  TestClient client(f.proxy.port());
  client.send(request("HEAD", f.at()));
  HttpResponse head = read_response(client, /*head_request=*/true);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(field(head.head, "Content-Length"), "12345");
  client.send(request("GET", f.at()));
  HttpResponse next = read_response(client);
  EXPECT_EQ(next.status, 200) << next.head;
  EXPECT_EQ(next.body, "after");
}

TEST(HttpForward, NoContentAndNotModifiedHaveNoBody) {
  Fixture f([](const HttpOrigin::Request& r) {
    Reply reply;
    reply.head = r.target == "/204" ? "HTTP/1.1 204 No Content\r\n\r\n"
                                    : "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n";
    return reply;
  });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at("/204")));
  EXPECT_EQ(read_response(client).status, 204);
  client.send(request("GET", f.at("/304")));
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 304);
  EXPECT_EQ(field(response.head, "ETag"), "\"x\"");
  client.send(request("GET", f.at("/204")));
  EXPECT_EQ(read_response(client).status, 204);
}

// ---------------------------------------------------------------------------------------------
// Bodies

TEST(HttpForward, PostWithContentLengthArrivesExactly) {
  const std::string body = HttpOrigin::pattern(0, 3 * 1024 * 1024 + 17);
  Fixture f([](const HttpOrigin::Request& r) {
    return Reply::fixed(201, std::to_string(r.body.size()));
  });
  TestClient client(f.proxy.port());
  client.send(request("POST", f.at("/upload"),
                      "Content-Length: " + std::to_string(body.size()) + "\r\n", body));
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 201) << response.head;
  EXPECT_EQ(response.body, std::to_string(body.size()));
  ASSERT_TRUE(f.origin.wait_for_requests(1));
  const auto requests = f.origin.requests();
  EXPECT_EQ(field(requests[0].head, "Content-Length"), std::to_string(body.size()));
  EXPECT_FALSE(has_field(requests[0].head, "Transfer-Encoding"));
  EXPECT_TRUE(requests[0].body == body) << "the body arrived changed";
}

TEST(HttpForward, LargeContentLengthOnALaterRequestArrivesExactly) {
  const std::string body = HttpOrigin::pattern(7, 4 * 1024 * 1024 + 1);
  Fixture f([](const HttpOrigin::Request& r) {
    return Reply::fixed(200, std::to_string(r.body.size()));
  });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at("/first")));
  ASSERT_EQ(read_response(client).status, 200);
  client.send(request("PUT", f.at("/upload"),
                      "Content-Length: " + std::to_string(body.size()) + "\r\n", body));
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 200) << response.head;
  EXPECT_EQ(response.body, std::to_string(body.size()));
  ASSERT_TRUE(f.origin.wait_for_requests(2));
  EXPECT_TRUE(f.origin.requests()[1].body == body) << "the body arrived changed";
  EXPECT_EQ(f.origin.connections(), 1u);
}

TEST(HttpForward, ChunkedBodiesOfSeveralMegabytesStreamBothWays) {
  constexpr std::uint64_t kDown = 5 * 1024 * 1024 + 3;
  Fixture f([](const HttpOrigin::Request&) {
    Reply reply;
    reply.head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    reply.stream_bytes = kDown;
    reply.stream_chunked = true;
    return reply;
  });
  TestClient client(f.proxy.port());
  client.send("POST " + f.at("/stream") +
              " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  std::string sent;
  for (int i = 0; i < 64; ++i) {
    const std::string piece = HttpOrigin::pattern(sent.size(), 65536 + static_cast<std::size_t>(i));
    sent += piece;
    client.send(chunk(piece));
  }
  client.send("0\r\n\r\n");

  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(field(response.head, "Transfer-Encoding"), "chunked");
  EXPECT_TRUE(response.complete);
  ASSERT_EQ(response.body.size(), kDown);
  EXPECT_TRUE(response.body == HttpOrigin::pattern(0, kDown)) << "the response body changed";

  ASSERT_TRUE(f.origin.wait_for_requests(1));
  const auto requests = f.origin.requests();
  EXPECT_EQ(field(requests[0].head, "Transfer-Encoding"), "chunked");
  EXPECT_FALSE(has_field(requests[0].head, "Content-Length"));
  EXPECT_EQ(requests[0].body.size(), sent.size());
  EXPECT_TRUE(requests[0].body == sent) << "the request body changed";
}

TEST(HttpForward, ResponseStreamsBeforeTheOriginIsDone) {
  // The origin sends the head and half of the body, then stays silent: the client must get that
  // half while the response is still incomplete, so the proxy cannot be holding the body whole.
  Fixture f([](const HttpOrigin::Request&) {
    Reply reply;
    reply.head = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
    reply.body = "first";
    return reply;
  });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at()));
  ResponseHead head = read_response_head(client);
  client.pending = head.body_after;
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(client.read_exact(5), "first");
}

// ---------------------------------------------------------------------------------------------
// Expect: 100-continue and interim responses

TEST(HttpForward, ExpectContinueIsAnsweredAndTheBodyFlows) {
  Fixture f([](const HttpOrigin::Request& r) { return Reply::fixed(200, r.body); });
  TestClient client(f.proxy.port());
  client.send("PUT " + f.at("/put") +
              " HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n");
  ResponseHead interim = read_response_head(client);
  EXPECT_EQ(interim.status, 100) << interim.head;
  EXPECT_EQ(interim.head, "HTTP/1.1 100 Continue\r\n\r\n");
  client.pending = interim.body_after;
  client.send("hello world");
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "hello world");
  ASSERT_TRUE(f.origin.wait_for_requests(1));
  EXPECT_FALSE(has_field(f.origin.requests()[0].head, "Expect"))
      << "the proxy answered the expectation itself";
}

TEST(HttpForward, ExpectContinueDeniedGetsTheFinalAnswerWithoutContinue) {
  Fixture f({}, "blocked.test\n");
  TestClient client(f.proxy.port());
  client.send("POST " + url("blocked.test", f.origin.port()) +
              " HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n");
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 403) << head.head;
}

TEST(HttpForward, InterimResponsesFromTheOriginArePassedOn) {
  Fixture f([](const HttpOrigin::Request&) {
    Reply reply = Reply::fixed(200, "done");
    reply.interim = "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n";
    return reply;
  });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at()));
  ResponseHead early = read_response_head(client);
  client.pending = early.body_after;
  EXPECT_EQ(early.status, 103);
  EXPECT_EQ(field(early.head, "Link"), "</a.css>; rel=preload");
  EXPECT_EQ(field(early.head, "Via"), "1.1 sandgate");
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "done");
}

// ---------------------------------------------------------------------------------------------
// Hop-by-hop fields

TEST(HttpForward, HopByHopFieldsAreStrippedBothWays) {
  Fixture f([](const HttpOrigin::Request&) {
    return Reply::fixed(200, "ok",
                        "Connection: X-Resp-Hop, keep-alive\r\n"
                        "X-Resp-Hop: 1\r\n"
                        "Keep-Alive: timeout=5\r\n"
                        "Proxy-Authenticate: Basic realm=\"x\"\r\n"
                        "Proxy-Connection: keep-alive\r\n"
                        "Trailer: X-Sum\r\n"
                        "Upgrade: h2c\r\n"
                        "Via: 1.0 upstream-cache\r\n"
                        "X-End-To-End: kept\r\n");
  });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at(),
                      "Proxy-Authorization: Basic c2VjcmV0\r\n"
                      "Proxy-Connection: keep-alive\r\n"
                      "Keep-Alive: timeout=5\r\n"
                      "Connection: keep-alive, X-Hop, Upgrade, Content-Length\r\n"
                      "X-Hop: secret\r\n"
                      "TE: trailers\r\n"
                      "Trailer: X-Sum\r\n"
                      "Upgrade: h2c\r\n"
                      "X-End-To-End: kept\r\n"));
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 200);
  for (const char* name : {"X-Resp-Hop", "Keep-Alive", "Proxy-Authenticate", "Proxy-Connection",
                           "Trailer", "Upgrade", "Connection"}) {
    EXPECT_FALSE(has_field(response.head, name)) << name << " in\n" << response.head;
  }
  EXPECT_EQ(field(response.head, "X-End-To-End"), "kept");
  EXPECT_EQ(field(response.head, "Via"), "1.0 upstream-cache, 1.1 sandgate");

  ASSERT_TRUE(f.origin.wait_for_requests(1));
  const std::string head = f.origin.requests()[0].head;
  for (const char* name : {"Proxy-Authorization", "Proxy-Connection", "Keep-Alive", "Connection",
                           "X-Hop", "TE", "Trailer", "Upgrade"}) {
    EXPECT_FALSE(has_field(head, name)) << name << " in\n" << head;
  }
  EXPECT_EQ(field(head, "X-End-To-End"), "kept");
  EXPECT_EQ(field(head, "Via"), "1.1 sandgate");
}

TEST(HttpForward, ConnectionNamingContentLengthDoesNotUnframeTheBody) {
  Fixture f([](const HttpOrigin::Request& r) { return Reply::fixed(200, r.body); });
  TestClient client(f.proxy.port());
  client.send(
      request("POST", f.at(), "Content-Length: 5\r\nConnection: Content-Length\r\n", "abcde"));
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "abcde");
  ASSERT_TRUE(f.origin.wait_for_requests(1));
  EXPECT_EQ(field(f.origin.requests()[0].head, "Content-Length"), "5");
}

// ---------------------------------------------------------------------------------------------
// Request smuggling shapes: refused with 400 before anything is sent upstream, both on a
// connection's first request (head read by the session) and on a later one (head read here).

struct SmugglingCase {
  const char* name;
  const char* head_after_request_line;  // fields, without the final empty line
  const char* proxy_status;             // expected in the Proxy-Status details
};

class SmugglingTest : public ::testing::TestWithParam<std::tuple<SmugglingCase, bool>> {};

TEST_P(SmugglingTest, RefusedWith400AndNothingReachesTheOrigin) {
  const auto& [shape, second_request] = GetParam();
  Fixture f;
  TestClient client(f.proxy.port());
  if (second_request) {
    client.send(request("GET", f.at("/first")));
    ASSERT_EQ(read_response(client).status, 200);
  }
  client.send("POST " + f.at("/x") + " HTTP/1.1\r\nHost: x\r\n" + shape.head_after_request_line +
              "\r\nabcdef0\r\n\r\n");
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 400) << head.head;
  EXPECT_NE(head.proxy_status.find("error=http_request_error"), std::string::npos)
      << head.proxy_status;
  EXPECT_NE(head.proxy_status.find(shape.proxy_status), std::string::npos) << head.proxy_status;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(f.origin.requests().size(), second_request ? 1u : 0u);
  if (!second_request) {
    EXPECT_EQ(f.origin.connections(), 0u);
    EXPECT_EQ(f.origin.bytes_received(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    HttpForwardShapes, SmugglingTest,
    ::testing::Combine(
        ::testing::Values(
            // Beast refuses these at head-parse time.
            SmugglingCase{"conflicting_length", "Content-Length: 5\r\nContent-Length: 6\r\n",
                          "bad-request"},
            SmugglingCase{"length_then_chunked",
                          "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "bad-request"},
            SmugglingCase{"chunked_then_length",
                          "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "bad-request"},
            SmugglingCase{"chunked_twice",
                          "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
                          "bad-request"},
            SmugglingCase{"space_before_colon", "Content-Length : 5\r\n", "bad-request"},
            SmugglingCase{"tab_before_colon", "Transfer-Encoding\t: chunked\r\n", "bad-request"},
            SmugglingCase{"bad_name_character", "X(y): 1\r\nContent-Length: 5\r\n", "bad-request"},
            SmugglingCase{"control_in_value", "X-A: a\x01z\r\nContent-Length: 5\r\n",
                          "bad-request"},
            SmugglingCase{"del_in_value", "X-A: a\x7fz\r\nContent-Length: 5\r\n", "bad-request"},
            SmugglingCase{"bare_cr_in_value", "X-A: a\rz\r\nContent-Length: 5\r\n", "bad-request"},
            SmugglingCase{"space_in_name", "X Y: z\r\nContent-Length: 5\r\n", "bad-request"},
            // Issue 27: one strict line rule for every head (rules/http_lines.hpp).
            SmugglingCase{"bare_lf_ends_a_field", "X-A: a\nContent-Length: 5\r\n", "bare LF"},
            SmugglingCase{"bare_lf_hides_a_request",
                          "X-A: a\n\nGET http://blocked.test/ HTTP/1.1\r\nContent-Length: 5\r\n",
                          "bare LF"},
            SmugglingCase{"bare_cr_ends_a_field", "X-A: a\rContent-Length: 5\r\n", "bare CR"},
            // Beast accepts these; the proxy refuses them.
            SmugglingCase{"duplicate_length", "Content-Length: 5\r\nContent-Length: 5\r\n",
                          "more than one Content-Length"},
            SmugglingCase{"length_list", "Content-Length: 5, 5\r\n", "Content-Length is a list"},
            SmugglingCase{"gzip_then_chunked", "Transfer-Encoding: gzip, chunked\r\n",
                          "only 'chunked' alone"},
            SmugglingCase{"chunked_then_gzip", "Transfer-Encoding: chunked, gzip\r\n",
                          "only 'chunked' alone"},
            SmugglingCase{"identity", "Transfer-Encoding: identity\r\nContent-Length: 5\r\n",
                          "only 'chunked' alone"},
            SmugglingCase{"gzip_with_length", "Transfer-Encoding: gzip\r\nContent-Length: 5\r\n",
                          "only 'chunked' alone"},
            SmugglingCase{"gzip_field_then_chunked",
                          "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
                          "only 'chunked' alone"},
            SmugglingCase{"two_hosts", "Host: a.test\r\nContent-Length: 5\r\n",
                          "more than one Host"}),
        ::testing::Bool()),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) +
             (std::get<1>(info.param) ? "_second" : "_first");
    });

TEST(HttpForwardSmuggling, ChunkedInHttp10IsRefused) {
  Fixture f;
  TestClient client(f.proxy.port());
  client.send("POST " + f.at() + " HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 400) << head.head;
  EXPECT_NE(head.proxy_status.find("HTTP/1.0 request cannot use Transfer-Encoding"),
            std::string::npos);
  EXPECT_EQ(f.origin.connections(), 0u);
}

// Obsolete line folding. On a later request the proxy reads the raw head and refuses it. On a
// connection's first request the head is read by the session, where Beast joins the folded
// lines into one before the proxy sees them: RFC 9112 section 5.2 allows that (replace each
// obs-fold with spaces before forwarding); the test holds the proxy to it: either a 400, or the
// origin receives the field on one line, never a fold.
TEST(HttpForwardSmuggling, ObsoleteLineFoldingOnALaterRequestIsRefused) {
  Fixture f;
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at("/first")));
  ASSERT_EQ(read_response(client).status, 200);
  client.send("GET " + f.at("/x") + " HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n");
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 400) << head.head;
  EXPECT_NE(head.proxy_status.find("obsolete line folding"), std::string::npos)
      << head.proxy_status;
  EXPECT_EQ(f.origin.requests().size(), 1u);
}

TEST(HttpForwardSmuggling, ObsoleteLineFoldingOnAFirstRequestIsNeverForwarded) {
  Fixture f;
  TestClient client(f.proxy.port());
  client.send("GET " + f.at("/x") +
              " HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\nTransfer-Encoding:\r\n chunked\r\n"
              "\r\n0\r\n\r\n");
  ResponseHead head = read_response_head(client);
  if (head.status == 400) {
    EXPECT_EQ(f.origin.connections(), 0u);
    return;
  }
  ASSERT_TRUE(f.origin.wait_for_requests(1)) << head.head;
  const std::string forwarded = f.origin.requests()[0].head;
  EXPECT_EQ(forwarded.find("\r\n "), std::string::npos) << forwarded;
  EXPECT_EQ(field(forwarded, "X-Folded"), "a b");
}

TEST(HttpForwardSmuggling, ControlCharactersInTheTargetAreRefused) {
  for (const std::string& bad : {std::string("/a\0b", 4), std::string("/a\rb"),
                                 std::string("/a\nb"), std::string("/a\tb")}) {
    Fixture f;
    TestClient client(f.proxy.port());
    client.send("GET " + f.at(bad) + " HTTP/1.1\r\nHost: x\r\n\r\n");
    ResponseHead head = read_response_head(client);
    EXPECT_EQ(head.status, 400) << head.head;
    EXPECT_EQ(f.origin.connections(), 0u);
  }
}

// ---------------------------------------------------------------------------------------------
// Targets

struct TargetCase {
  const char* name;
  const char* target;
  const char* code;  // in Proxy-Status details
};

class TargetTest : public ::testing::TestWithParam<TargetCase> {};

TEST_P(TargetTest, RefusedWith400) {
  const auto& param = GetParam();
  Fixture f;
  TestClient client(f.proxy.port());
  std::string target = param.target;
  const std::string port = std::to_string(f.origin.port());
  for (std::size_t at = target.find("PORT"); at != std::string::npos; at = target.find("PORT")) {
    target.replace(at, 4, port);
  }
  client.send("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n");
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 400) << head.head;
  EXPECT_NE(head.proxy_status.find(std::string("details=\"") + param.code + ":"), std::string::npos)
      << head.proxy_status;
  EXPECT_EQ(f.origin.connections(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    HttpForwardTargets, TargetTest,
    ::testing::Values(
        TargetCase{"https", "https://origin.test:PORT/", "https-absolute-form"},
        TargetCase{"https_upper", "HTTPS://origin.test:PORT/", "https-absolute-form"},
        TargetCase{"origin_form", "/index.html", "origin-form"},
        TargetCase{"ftp", "ftp://origin.test:PORT/", "unsupported-scheme"},
        TargetCase{"asterisk", "*", "unsupported-scheme"},
        TargetCase{"authority_only", "origin.test:PORT", "unsupported-scheme"},
        TargetCase{"userinfo", "http://user:pw@origin.test:PORT/", "invalid-host"},
        TargetCase{"userinfo_trick", "http://origin.test:PORT@evil.test/", "invalid-host"},
        TargetCase{"empty_host", "http:///path", "invalid-host"},
        TargetCase{"empty_port", "http://origin.test:/", "invalid-host"},
        TargetCase{"port_zero", "http://origin.test:0/", "invalid-host"},
        TargetCase{"port_leading_zero", "http://origin.test:080/", "invalid-host"},
        TargetCase{"port_too_big", "http://origin.test:65536/", "invalid-host"},
        TargetCase{"port_sign", "http://origin.test:+80/", "invalid-host"},
        TargetCase{"unbracketed_v6", "http://::1:PORT/", "invalid-host"},
        TargetCase{"percent_host", "http://origin%2etest:PORT/", "invalid-host"},
        TargetCase{"backslash_host", "http://origin.test\\@evil.test/", "invalid-host"},
        TargetCase{"fragment", "http://origin.test:PORT/a#frag", "bad-request"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(HttpForward, UserinfoIsReportedAsSuch) {
  Fixture f;
  TestClient client(f.proxy.port());
  client.send(request("GET", "http://user@origin.test/"));
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 400);
  EXPECT_NE(head.proxy_status.find("user information"), std::string::npos) << head.proxy_status;
}

TEST(HttpForward, IpLiteralFollowsThePolicy) {
  Fixture f;
  TestClient client(f.proxy.port());
  client.send(request("GET", url("127.0.0.1", f.origin.port())));
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 403) << head.head;
  EXPECT_NE(head.proxy_status.find("error=destination_ip_prohibited"), std::string::npos);
  EXPECT_NE(head.proxy_status.find("details=\"ip-address:"), std::string::npos);
  EXPECT_EQ(f.origin.connections(), 0u);
}

TEST(HttpForward, Ipv6Origin) {
  HttpOrigin origin([](const HttpOrigin::Request& r) { return Reply::fixed(200, r.field("Host")); },
                    HttpOrigin::Family::v6);
  TestProxy proxy("", [](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.policy.allow_ip = true;
  });
  TestClient client(proxy.port());
  client.send(request("GET", "http://[::1]:" + std::to_string(origin.port()) + "/v6"));
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 200) << response.head;
  EXPECT_EQ(response.body, "[::1]:" + std::to_string(origin.port()));
  ASSERT_TRUE(origin.wait_for_requests(1));
  EXPECT_TRUE(origin.requests()[0].raw.starts_with("GET /v6 HTTP/1.1\r\n"));
}

// ---------------------------------------------------------------------------------------------
// WebSocket

TEST(HttpForward, WebSocketUpgradeBecomesATunnel) {
  Fixture f([](const HttpOrigin::Request& r) {
    Reply reply;
    if (r.field("Upgrade") == "websocket") {
      reply.head =
          "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
          "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
      reply.echo = true;
      return reply;
    }
    return Reply::fixed(400, "no upgrade");
  });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at("/chat"),
                      "Upgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                      "Sec-WebSocket-Version: 13\r\n"));
  ResponseHead head = read_response_head(client);
  client.pending = head.body_after;
  ASSERT_EQ(head.status, 101) << head.head;
  EXPECT_EQ(field(head.head, "Upgrade"), "websocket");
  EXPECT_EQ(field(head.head, "Connection"), "Upgrade");
  EXPECT_EQ(field(head.head, "Sec-WebSocket-Accept"), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");

  client.send(std::string("\x81\x04ping", 6));
  EXPECT_EQ(client.read_exact(6), std::string("\x81\x04ping", 6));
  client.send("more bytes");
  EXPECT_EQ(client.read_exact(10), "more bytes");

  ASSERT_TRUE(f.origin.wait_for_requests(1));
  const std::string forwarded = f.origin.requests()[0].head;
  EXPECT_EQ(field(forwarded, "Upgrade"), "websocket");
  EXPECT_EQ(field(forwarded, "Connection"), "Upgrade");
  EXPECT_EQ(field(forwarded, "Sec-WebSocket-Key"), "dGhlIHNhbXBsZSBub25jZQ==");

  client.shutdown_write();
  EXPECT_EQ(client.read_to_end(), "");
}

// The origin of the WebSocket tests: a 101 for an upgrade, then an echo of every byte until the
// client's end of stream, which it passes back as its own. `behind` goes out right behind the
// 101 head (the start of the tunnelled stream, possibly in the same segment as the head).
HttpOrigin::Handler websocket_origin(std::string behind = "") {
  return [behind](const HttpOrigin::Request& r) {
    Reply reply;
    if (r.field("Upgrade") != "websocket") {
      return Reply::fixed(400, "no upgrade");
    }
    reply.head =
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
    reply.body = behind;
    reply.echo = true;
    return reply;
  };
}

const std::string kUpgradeFields =
    "Upgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";

// The JSON log's end lines.
std::vector<std::string> end_lines(const std::string& log) {
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"event\":\"end\"") != std::string::npos) {
      lines.push_back(line);
    }
  }
  return lines;
}

std::uint64_t number_field(const std::string& line, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  const std::size_t at = line.find(key);
  return at == std::string::npos ? ~0ULL
                                 : std::strtoull(line.c_str() + at + key.size(), nullptr, 10);
}

bool has_end_line(TestProxy& proxy) {
  return proxy.wait_for_log([](const std::string& log) { return !end_lines(log).empty(); });
}

TEST(HttpForwardWebSocket, EndLineIsTheRequestsWithEveryByteCounted) {
  Fixture f(websocket_origin());
  TestClient client(f.proxy.port());
  const std::string upgrade = request("GET", f.at("/chat"), kUpgradeFields);
  client.send(upgrade);
  ResponseHead head = read_response_head(client);
  client.pending = head.body_after;
  ASSERT_EQ(head.status, 101) << head.head;
  const std::string payload(300 * 1024, 'w');  // several pipefuls and socket buffers
  std::thread writer([&client, &payload] {
    try {
      client.send(payload);
    } catch (const std::exception&) {
      // The reader below fails the test.
    }
  });
  EXPECT_EQ(client.read_exact(payload.size()), payload);
  writer.join();
  client.shutdown_write();
  EXPECT_EQ(client.read_to_end(), "");

  ASSERT_TRUE(has_end_line(f.proxy)) << f.proxy.log_text();
  const auto lines = end_lines(f.proxy.log_text());
  ASSERT_EQ(lines.size(), 1u) << f.proxy.log_text();
  const std::string& line = lines[0];
  EXPECT_NE(line.find("\"method\":\"GET\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"host\":\"origin.test\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"verdict\":\"allow\",\"reason\":\"\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"outcome\":\"closed\""), std::string::npos) << line;
  ASSERT_TRUE(f.origin.wait_for_requests(1));
  EXPECT_EQ(number_field(line, "bytes_up"), f.origin.requests()[0].raw.size() + payload.size())
      << line;
  EXPECT_EQ(number_field(line, "bytes_down"), head.head.size() + payload.size()) << line;
}

TEST(HttpForwardWebSocket, BytesBehindTheHeadsBelongToTheTunnel) {
  const std::string greeting("\x81\x05hello", 7);
  Fixture f(websocket_origin(greeting));
  TestClient client(f.proxy.port());
  // The client's first frame in the same write as its upgrade request.
  const std::string frame("\x81\x04ping", 6);
  client.send(request("GET", f.at("/chat"), kUpgradeFields) + frame);
  ResponseHead head = read_response_head(client);
  client.pending = head.body_after;
  ASSERT_EQ(head.status, 101) << head.head;
  EXPECT_EQ(client.read_exact(greeting.size() + frame.size()), greeting + frame);
  client.shutdown_write();
  EXPECT_EQ(client.read_to_end(), "");
}

TEST(HttpForwardWebSocket, HalfCloseLetsTheOtherDirectionFinish) {
  Fixture f(websocket_origin());
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at("/chat"), kUpgradeFields));
  ResponseHead head = read_response_head(client);
  client.pending = head.body_after;
  ASSERT_EQ(head.status, 101) << head.head;
  // Everything, then the end of the client's stream at once: the origin still echoes all of it
  // back through the direction that is still open, then ends its own.
  const std::string payload(200 * 1024, 'h');
  std::thread writer([&client, &payload] {
    try {
      client.send(payload);
    } catch (const std::exception&) {
      // The reader below fails the test.
    }
    client.shutdown_write();
  });
  bool reset = false;
  EXPECT_EQ(client.read_to_end(&reset), payload);
  writer.join();
  EXPECT_FALSE(reset);
  ASSERT_TRUE(has_end_line(f.proxy));
  EXPECT_NE(end_lines(f.proxy.log_text())[0].find("\"outcome\":\"closed\""), std::string::npos);
}

TEST(HttpForwardWebSocket, IdleConnectionTimesOut) {
  HttpOrigin origin(websocket_origin());
  TestProxy proxy("", [](settings::Settings& s) {
    allow_loopback(s);
    s.idle_timeout = std::chrono::seconds(1);
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  client.send(request("GET", url("origin.test", origin.port(), "/chat"), kUpgradeFields));
  ResponseHead head = read_response_head(client);
  ASSERT_EQ(head.status, 101) << head.head;
  bool reset = false;
  client.read_to_end(&reset, std::chrono::seconds(5));
  EXPECT_TRUE(reset);
  ASSERT_TRUE(has_end_line(proxy)) << proxy.log_text();
  EXPECT_NE(end_lines(proxy.log_text())[0].find("\"outcome\":\"idle-timeout\""), std::string::npos)
      << proxy.log_text();
}

TEST(HttpForwardWebSocket, OriginResetIsPassedOnAsAReset) {
  // An origin that upgrades, then resets the connection.
  HttpOrigin origin([](const HttpOrigin::Request&) {
    Reply reply;
    reply.head =
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
    reply.reset = true;
    return reply;
  });
  TestProxy proxy("", allow_loopback);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  client.send(request("GET", url("origin.test", origin.port(), "/chat"), kUpgradeFields));
  ResponseHead head = read_response_head(client);
  ASSERT_EQ(head.status, 101) << head.head;
  // The reset may have arrived already: then sending fails with it, and it is reported there
  // rather than to the read.
  bool send_reset = false;
  try {
    client.send("x");
  } catch (const std::exception&) {
    send_reset = true;
  }
  bool reset = false;
  EXPECT_EQ(client.read_to_end(&reset, std::chrono::seconds(5)), "");
  EXPECT_TRUE(reset || send_reset);
  ASSERT_TRUE(has_end_line(proxy)) << proxy.log_text();
  EXPECT_NE(end_lines(proxy.log_text())[0].find("\"outcome\":\"reset\""), std::string::npos)
      << proxy.log_text();
}

TEST(HttpForwardWebSocket, ReloadThatDeniesItsHostClosesIt) {
  Fixture f(websocket_origin());
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at("/chat"), kUpgradeFields));
  ResponseHead head = read_response_head(client);
  client.pending = head.body_after;
  ASSERT_EQ(head.status, 101) << head.head;
  client.send("ping");
  ASSERT_EQ(client.read_exact(4), "ping");

  std::vector<rules::LoadIssue> issues;
  auto set = rules::DomainSet::parse("origin.test\n", "/reloaded/blocked.txt", issues);
  ASSERT_TRUE(issues.empty());
  f.proxy.server().publish(std::make_shared<const rules::Policy>(f.proxy.settings().policy,
                                                                 std::move(set), std::nullopt));
  client.read_to_end(nullptr, std::chrono::seconds(3));  // returns once the gate closed it
  ASSERT_TRUE(has_end_line(f.proxy)) << f.proxy.log_text();
  const std::string line = end_lines(f.proxy.log_text())[0];
  EXPECT_NE(line.find("\"method\":\"GET\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"verdict\":\"deny\",\"reason\":\"blocklist\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"rule\":\"/reloaded/blocked.txt:1 origin.test\""), std::string::npos)
      << line;
  EXPECT_NE(line.find("\"outcome\":\"revoked\""), std::string::npos) << line;
  EXPECT_EQ(number_field(line, "bytes_down"), head.head.size() + 4) << line;
}

TEST(HttpForward, RefusedUpgradeContinuesAsHttp) {
  Fixture f([](const HttpOrigin::Request& r) { return Reply::fixed(426, "nope " + r.target); });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at("/ws"), "Upgrade: websocket\r\nConnection: Upgrade\r\n"));
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 426);
  EXPECT_EQ(response.body, "nope /ws");
  client.send(request("GET", f.at("/after")));
  EXPECT_EQ(read_response(client).body, "nope /after");
}

TEST(HttpForward, UnaskedSwitchIsABadGateway) {
  Fixture f([](const HttpOrigin::Request&) {
    Reply reply;
    reply.head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n";
    return reply;
  });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at(), "Upgrade: h2c\r\nConnection: Upgrade\r\n"));
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 502) << head.head;
  EXPECT_NE(head.proxy_status.find("bad-response"), std::string::npos);
  ASSERT_TRUE(f.origin.wait_for_requests(1));
  EXPECT_FALSE(has_field(f.origin.requests()[0].head, "Upgrade")) << "h2c is not forwarded";
}

// ---------------------------------------------------------------------------------------------
// Upstream failures

TEST(HttpForwardUpstream, RefusedPortIs502) {
  std::uint16_t closed_port = 0;
  {
    HttpOrigin gone;
    closed_port = gone.port();
  }
  TestProxy proxy("", allow_loopback);
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  client.send(request("GET", url("origin.test", closed_port)));
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 502) << head.head;
  EXPECT_NE(head.proxy_status.find("error=connection_refused"), std::string::npos);
  EXPECT_NE(head.proxy_status.find("details=\"connection-refused:"), std::string::npos);
}

TEST(HttpForwardUpstream, UnknownNameIs502DnsError) {
  TestProxy proxy("", allow_loopback);
  TestClient client(proxy.port());
  client.send(request("GET", "http://nowhere.test/"));
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 502) << head.head;
  EXPECT_NE(head.proxy_status.find("error=dns_error"), std::string::npos) << head.proxy_status;
}

TEST(HttpForwardUpstream, NameResolvingToLoopbackIsDeniedWhenLoopbackIsBlocked) {
  HttpOrigin origin;
  TestProxy proxy;
  proxy.dns().set("inward.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  client.send(request("GET", url("inward.test", origin.port())));
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 403) << head.head;
  EXPECT_NE(head.proxy_status.find("details=\"loopback:"), std::string::npos);
  EXPECT_EQ(origin.connections(), 0u);
}

TEST(HttpForwardUpstream, ClosedWithoutResponseIs502) {
  Fixture f([](const HttpOrigin::Request&) {
    Reply reply;
    reply.close = true;
    return reply;
  });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at()));
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 502) << head.head;
  EXPECT_NE(head.proxy_status.find("error=http_response_incomplete"), std::string::npos);
  EXPECT_NE(head.proxy_status.find("details=\"upstream-closed:"), std::string::npos);
}

TEST(HttpForwardUpstream, GarbageResponseIs502) {
  Fixture f([](const HttpOrigin::Request&) {
    Reply reply;
    reply.head = "SSH-2.0-OpenSSH\r\n\r\n";
    reply.close = true;
    return reply;
  });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at()));
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 502) << head.head;
  EXPECT_NE(head.proxy_status.find("details=\"bad-response:"), std::string::npos);
}

// A client that sent its whole request and left while the origin had not answered: the
// exchange ends then, logged, with its connection and upstream closed and no longer counted,
// not whenever the silent origin speaks (with no idle timeout, possibly never). A pipelined
// request behind the first is not taken for the client leaving.
TEST(HttpForwardUpstream, ClientLeavingBeforeTheResponseEndsTheExchange) {
  std::atomic<bool> release{false};
  std::atomic<int> arrived{0};
  Fixture f([&release, &arrived](const HttpOrigin::Request& r) {
    if (!r.complete) {
      ++arrived;
      Reply read_it;
      read_it.read_body = true;
      return read_it;
    }
    for (int i = 0; i < 300 && !release; ++i) {
      std::this_thread::sleep_for(10ms);  // silent for up to 3 s
    }
    return Reply::fixed(200, "late");
  });
  {
    TestClient pipelined(f.proxy.port());
    pipelined.send(request("GET", f.at("/1")) + request("GET", f.at("/2")));
    std::this_thread::sleep_for(200ms);
    release = true;
    EXPECT_EQ(read_response(pipelined).body, "late");
    EXPECT_EQ(read_response(pipelined).body, "late");
  }
  release = false;
  ASSERT_TRUE(
      f.proxy.wait_for_log([](const std::string& log) { return end_lines(log).size() == 2; }));

  const auto started = std::chrono::steady_clock::now();
  {
    TestClient client(f.proxy.port());
    client.send(request("GET", f.at("/3")));
    for (int i = 0; i < 500 && arrived < 3; ++i) {
      std::this_thread::sleep_for(10ms);
    }
    ASSERT_EQ(arrived, 3);
    client.close();
  }
  bool ended = false;
  while (!ended && std::chrono::steady_clock::now() - started < 2s) {
    ended = end_lines(f.proxy.log_text()).size() == 3 && f.proxy.server().open_connections() == 0;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(ended) << "the exchange outlived its client\n" << f.proxy.log_text();
  const auto lines = end_lines(f.proxy.log_text());
  ASSERT_EQ(lines.size(), 3u) << f.proxy.log_text();
  EXPECT_NE(lines[2].find("\"outcome\":\"reset\""), std::string::npos) << lines[2];
  release = true;
}

TEST(HttpForwardUpstream, ClosingMidResponseClosesTheClientWithoutInjectedBytes) {
  Fixture f([](const HttpOrigin::Request&) {
    Reply reply;
    reply.head = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n";
    reply.body = HttpOrigin::pattern(0, 1000);
    reply.reset = true;
    return reply;
  });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at()));
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(field(head.head, "Content-Length"), "100000");
  client.pending = head.body_after;
  bool reset = false;
  const std::string rest = client.read_to_end(&reset);
  EXPECT_EQ(rest, HttpOrigin::pattern(0, 1000)) << "only the origin's bytes, nothing added";
  EXPECT_TRUE(f.proxy.wait_for_log([](const std::string& log) {
    return log.find("\"event\":\"end\"") != std::string::npos &&
           log.find("\"outcome\":\"reset\"") != std::string::npos;
  })) << f.proxy.log_text();
}

TEST(HttpForwardUpstream, ChunkedResponseCutShortIsNotCompleted) {
  Fixture f([](const HttpOrigin::Request&) {
    Reply reply;
    reply.head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    reply.body = "5\r\nhello\r\n10\r\nonly part";
    reply.close = true;
    return reply;
  });
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at()));
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 200);
  EXPECT_FALSE(response.complete) << "the proxy must not add the final chunk";
  EXPECT_EQ(response.body.substr(0, 5), "hello");
}

TEST(HttpForwardUpstream, EarlyResponseToAnUploadEndsTheConnection) {
  Fixture f([](const HttpOrigin::Request&) {
    Reply reply = Reply::fixed(413, "too big", "Connection: close\r\n");
    reply.read_body = false;
    reply.close = true;
    return reply;
  });
  TestClient client(f.proxy.port());
  client.send("POST " + f.at() + " HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n");
  client.send(HttpOrigin::pattern(0, 100000));
  HttpResponse response = read_response(client);
  EXPECT_EQ(response.status, 413) << response.head;
  EXPECT_EQ(response.body, "too big");
  EXPECT_EQ(field(response.head, "Connection"), "close");
}

TEST(HttpForwardUpstream, OriginClosingDuringAnUploadIs502) {
  Fixture f([](const HttpOrigin::Request&) {
    Reply reply;
    reply.read_body = false;
    reply.close = true;  // no response at all
    return reply;
  });
  TestClient client(f.proxy.port());
  client.send("POST " + f.at() + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  client.send(chunk(HttpOrigin::pattern(0, 1000)));
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 502) << head.head << f.proxy.log_text();
  EXPECT_NE(head.proxy_status.find("details=\"upstream-closed:"), std::string::npos)
      << head.proxy_status;
}

TEST(HttpForwardUpstream, MalformedChunkedBodyIs400) {
  Fixture f;  // the origin waits for a body that never completes
  TestClient client(f.proxy.port());
  client.send("POST " + f.at() + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  client.send("zz\r\nnot a chunk\r\n");
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 400) << head.head;
  EXPECT_NE(head.proxy_status.find("details=\"bad-request: the request body is malformed"),
            std::string::npos)
      << head.proxy_status;
}

TEST(HttpForwardUpstream, IdleOriginTimesOutWith502) {
  HttpOrigin origin([](const HttpOrigin::Request& r) {
    if (r.complete) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    }
    return Reply::fixed(200, "late");
  });
  TestProxy proxy("", [](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.idle_timeout = std::chrono::seconds(1);
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  client.send(request("GET", url("origin.test", origin.port())));
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 502) << head.head;
  EXPECT_NE(head.proxy_status.find("details=\"response-timeout:"), std::string::npos)
      << head.proxy_status;
}

// ---------------------------------------------------------------------------------------------
// Heads on kept-alive connections

TEST(HttpForwardHeads, OversizedLaterHeadGets431) {
  Fixture f;
  TestClient client(f.proxy.port());
  client.send(request("GET", f.at()));
  ASSERT_EQ(read_response(client).status, 200);
  client.send(request("GET", f.at(), "X-Big: " + std::string(17 * 1024, 'a') + "\r\n"));
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 431) << head.head;
}

TEST(HttpForwardHeads, IdleKeptAliveConnectionIsClosedQuietly) {
  HttpOrigin origin;
  TestProxy proxy("", [](settings::Settings& s) {
    s.policy.block_loopback = false;
    s.head_timeout = std::chrono::seconds(1);
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  TestClient client(proxy.port());
  client.send(request("GET", url("origin.test", origin.port())));
  ASSERT_EQ(read_response(client).status, 200);
  EXPECT_EQ(client.read_to_end(nullptr, std::chrono::seconds(5)), "")
      << "no 408 on an idle connection";
}

TEST(HttpForwardHeads, EmptyLinesBetweenRequestsAreIgnored) {
  Fixture f;
  TestClient client(f.proxy.port());
  client.send(request("POST", f.at(), "Content-Length: 2\r\n", "hi") + "\r\n");
  auto first = read_response(client);
  ASSERT_EQ(first.status, 200) << first.head << first.body << f.proxy.log_text();
  client.send(request("GET", f.at()));
  EXPECT_EQ(read_response(client).status, 200);
}

// ---------------------------------------------------------------------------------------------
// The real curl

std::string run(const std::string& command) {
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return output;
  }
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
    output.append(buffer, n);
  }
  ::pclose(pipe);
  return output;
}

TEST(HttpForwardCurl, CurlGetsThroughTheProxy) {
  if (!std::filesystem::exists("/usr/bin/curl")) {
    GTEST_SKIP() << "no curl";
  }
  Fixture f([](const HttpOrigin::Request& r) { return Reply::fixed(200, "curl saw " + r.target); });
  const std::string output =
      run("/usr/bin/curl -sS --max-time 10 -x http://127.0.0.1:" + std::to_string(f.proxy.port()) +
          " " + f.at("/path?x=1") + " 2>&1");
  EXPECT_EQ(output, "curl saw /path?x=1");
  ASSERT_TRUE(f.origin.wait_for_requests(1));
  EXPECT_EQ(field(f.origin.requests()[0].head, "Host"),
            "origin.test:" + std::to_string(f.origin.port()));
  EXPECT_FALSE(has_field(f.origin.requests()[0].head, "Proxy-Connection"));
}

TEST(HttpForwardCurl, CurlUploadsALargeBodyWithExpectContinue) {
  if (!std::filesystem::exists("/usr/bin/curl")) {
    GTEST_SKIP() << "no curl";
  }
  Fixture f([](const HttpOrigin::Request& r) {
    return Reply::fixed(200, std::to_string(r.body.size()));
  });
  const std::string file = f.proxy.folder() + "/upload.bin";
  const std::string body = HttpOrigin::pattern(0, 2 * 1024 * 1024 + 5);
  std::ofstream(file, std::ios::binary) << body;
  const std::string output =
      run("/usr/bin/curl -sS --max-time 20 -H 'Expect: 100-continue' --data-binary @" + file +
          " -x http://127.0.0.1:" + std::to_string(f.proxy.port()) + " " + f.at("/up") + " 2>&1");
  EXPECT_EQ(output, std::to_string(body.size()));
  ASSERT_TRUE(f.origin.wait_for_requests(1));
  EXPECT_TRUE(f.origin.requests()[0].body == body);
}

}  // namespace
}  // namespace sandgate::testing
