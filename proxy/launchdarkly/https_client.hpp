// A small HTTPS client for LaunchDarkly's endpoints, on Boost.Beast over OpenSSL.
//
// Requests go over kept-alive connections: an idle connection is reused for the next request
// to the same service (a burst of new domains costs a few TLS handshakes, not one each), and
// one that the server closed meanwhile is replaced once. The event stream has a connection of
// its own. TLS 1.2 or later, the peer verified against the system's CAs
// (OpenSSL's default paths, so SSL_CERT_FILE and SSL_CERT_DIR work) and its name checked against
// the host; SNI is sent. Plain http is used only where the settings allowed it (loopback).
//
// The client's own connections are dialled directly: they are the gate's, not the confined
// process's, and never pass through its policy. Every step runs under one deadline; on expiry
// the socket is closed and the request fails with a sentence saying so.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/launchdarkly/reply_budget.hpp"
#include "proxy/settings/settings.hpp"
#include "rules/expected.hpp"

namespace sandgate::launchdarkly {

struct HttpReply {
  unsigned status = 0;
  std::string content_type;  // lower-cased media type without parameters: "application/json"
  std::string body;
  std::string retry_after;  // the Retry-After field, as sent (empty: none)
  // The body's share of the gate-wide reply budget, given back when the reply is destroyed
  // (so: after it was parsed). Makes the reply move-only.
  ReplyBudget::Charge charge;
};

// Why a request got no reply: a sentence, and whether it was the reply budget that refused
// the body (a limit of the gate's, not a failure of the endpoint).
struct FetchFailure {
  std::string why;
  bool over_budget = false;
};

// How a stream ended: why (a sentence), and when the server refused it, its status.
struct StreamEnd {
  StreamEnd() = default;
  explicit StreamEnd(std::string why_) : why(std::move(why_)) {}

  std::string why;
  unsigned status = 0;      // an HTTP error status that refused the stream; 0 otherwise
  std::string retry_after;  // that reply's Retry-After field
};

// `Host` as the request must carry it: the port is added when it is not the scheme's default
// (a Relay Proxy on a custom port), an IPv6 address goes in brackets (RFC 9110 7.2).
std::string host_field(const settings::ServiceUri& service);

// The TLS settings every LaunchDarkly connection uses: TLS 1.2 or later, the peer verified
// against the system's CAs (SSL_CERT_FILE and SSL_CERT_DIR are honoured).
boost::asio::ssl::context make_client_tls();

struct HttpRequest {
  boost::beast::http::verb method = boost::beast::http::verb::get;
  std::string target;  // path and query, after the service's prefix
  std::string body;    // sent with Content-Type: application/json when not empty
  std::string accept = "application/json";
};

class HttpsClient {
 public:
  // `tls` must outlive every connection (coroutines left in `io` when it is destroyed still
  // hold TLS streams made from it). `max_body` bounds a reply's body; `budget` (which must
  // outlive the client) bounds the bodies of every fetch() at once.
  HttpsClient(boost::asio::io_context& io, boost::asio::ssl::context& tls, std::size_t max_body,
              ReplyBudget& budget);
  ~HttpsClient();

  // One request, on a kept-alive connection when one is idle. The reply's body is bounded, and
  // charged to the budget: before it is read when the reply states its length, as it arrives
  // otherwise; a body that does not fit fails the request (over_budget) and its connection is
  // closed. Failure: a sentence such as "connection refused", "TLS: certificate verify failed",
  // "no reply within 5 s". Runs on `io`'s thread only.
  boost::asio::awaitable<Expected<HttpReply, FetchFailure>> fetch(
      const settings::ServiceUri& service, HttpRequest request, std::chrono::milliseconds timeout);

  // Closes the idle connections (before `io` is destroyed, or when the client stops).
  void close_idle();

  // A long-lived response (Server-Sent Events). Connects within `connect_timeout`; a non-200
  // reply or another content type than `expected_type` ends it at once. Then every chunk of the
  // body goes to `on_bytes` (return false to stop), each read waiting at most `read_timeout`.
  // `on_open` runs once the headers were accepted. Returns why the stream ended.
  boost::asio::awaitable<StreamEnd> stream(const settings::ServiceUri& service, HttpRequest request,
                                           std::string_view expected_type,
                                           std::chrono::milliseconds connect_timeout,
                                           std::chrono::milliseconds read_timeout,
                                           std::function<void()> on_open,
                                           std::function<bool(std::string_view)> on_bytes);

  struct Connection;

 private:
  struct Idle;
  std::shared_ptr<Connection> take_idle(const settings::ServiceUri& service);

  boost::asio::io_context& io_;
  boost::asio::ssl::context& tls_;
  std::size_t max_body_;
  ReplyBudget& budget_;
  std::string user_agent_;
  std::vector<Idle> idle_;  // kept-alive connections, most recently used last
};

}  // namespace sandgate::launchdarkly
