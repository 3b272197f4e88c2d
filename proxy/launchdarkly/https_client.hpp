// A small HTTPS client for LaunchDarkly's endpoints, on Boost.Beast over OpenSSL.
//
// One connection per request (evaluations are cached, so requests are rare), or one long-lived
// connection for the event stream. TLS 1.2 or later, the peer verified against the system's CAs
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
#include <string>
#include <string_view>
#include <vector>

#include "proxy/settings/settings.hpp"
#include "rules/expected.hpp"

namespace sandgate::launchdarkly {

struct HttpReply {
  unsigned status = 0;
  std::string content_type;  // lower-cased media type without parameters: "application/json"
  std::string body;
};

struct HttpRequest {
  boost::beast::http::verb method = boost::beast::http::verb::get;
  std::string target;  // path and query, after the service's prefix
  std::string body;    // sent with Content-Type: application/json when not empty
  std::string accept = "application/json";
};

class HttpsClient {
 public:
  explicit HttpsClient(boost::asio::io_context& io);

  // One request; the reply's body is bounded (kMaxPayloadBytes). Failure: a sentence such as
  // "connection refused", "TLS: certificate verify failed", "no reply within 5 s".
  boost::asio::awaitable<Expected<HttpReply, std::string>> fetch(
      const settings::ServiceUri& service, HttpRequest request,
      std::chrono::milliseconds timeout);

  // A long-lived response (Server-Sent Events). Connects within `connect_timeout`; a non-200
  // reply or another content type than `expected_type` ends it at once. Then every chunk of the
  // body goes to `on_bytes` (return false to stop), each read waiting at most `read_timeout`.
  // `on_open` runs once the headers were accepted. Returns why the stream ended.
  boost::asio::awaitable<std::string> stream(const settings::ServiceUri& service,
                                             HttpRequest request,
                                             std::string_view expected_type,
                                             std::chrono::milliseconds connect_timeout,
                                             std::chrono::milliseconds read_timeout,
                                             std::function<void()> on_open,
                                             std::function<bool(std::string_view)> on_bytes);

 private:
  boost::asio::io_context& io_;
  boost::asio::ssl::context tls_;
  std::string user_agent_;
};

}  // namespace sandgate::launchdarkly
