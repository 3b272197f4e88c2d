// Echo, source and sink behind one listener (see origin_server.hpp).
#include "bench/load/origin_server.hpp"

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "bench/load/h2_origin.hpp"
#include "bench/load/loopback_endpoint.hpp"
#include "bench/load/tls.hpp"
#include "proxy/asio/use_tuple.hpp"
#include "rules/ascii.hpp"

namespace sandgate::load {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// The first byte of every TLS connection: the content type of its ClientHello's record.
constexpr char tls_handshake_record = 0x16;

// Echo: the bytes already read go back first, then whatever else arrives, until EOF. The buffer
// is small and lives in the frame: setups send 32 bytes, and idle tunnels should cost the origin
// little so that 10,000 of them fit easily.
asio::awaitable<void> serve_echo(tcp::socket& socket, std::array<char, 512>& buffer,
                                 std::size_t pending) {
  while (true) {
    auto [write_error, written] =
        co_await asio::async_write(socket, asio::buffer(buffer.data(), pending), use_tuple);
    if (write_error) {
      co_return;
    }
    auto [read_error, n] = co_await socket.async_read_some(asio::buffer(buffer), use_tuple);
    if (read_error) {
      co_return;
    }
    pending = n;
  }
}

// Source: the shared, never-modified chunk is written until the client goes away (EPIPE/RST).
asio::awaitable<void> serve_source(tcp::socket& socket,
                                   std::shared_ptr<const std::vector<char>> chunk) {
  while (true) {
    auto [error, written] = co_await asio::async_write(socket, asio::buffer(*chunk), use_tuple);
    if (error) {
      co_return;
    }
  }
}

// Sink: one buffer per upload session, reused for every read.
asio::awaitable<void> serve_sink(tcp::socket& socket, std::size_t chunk_bytes) {
  std::vector<char> buffer(chunk_bytes);
  while (true) {
    auto [error, n] = co_await socket.async_read_some(asio::buffer(buffer), use_tuple);
    if (error) {
      co_return;
    }
  }
}

// True when `head` (a request head) has a Connection field that says `word` (any case).
bool connection_says(std::string_view head, std::string_view word) {
  const std::string lower = rules::ascii_lower(head);
  std::size_t at = lower.find("\r\nconnection:");
  while (at != std::string::npos) {
    const std::size_t end = lower.find("\r\n", at + 2);
    if (lower.substr(at, end - at).find(word) != std::string::npos) {
      return true;
    }
    at = lower.find("\r\nconnection:", at + 2);
  }
  return false;
}

// "GET /hold": a response head promising a body that never comes, then nothing until the client
// goes (a slow origin, for the hold workloads).
template <typename Stream>
asio::awaitable<void> hold_response(Stream& socket) {
  static constexpr std::string_view head =
      "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: "
      "1048576\r\n\r\n";
  auto [error, written] = co_await asio::async_write(socket, asio::buffer(head), use_tuple);
  std::array<char, 512> ignored;
  while (!error) {
    std::tie(error, written) = co_await socket.async_read_some(asio::buffer(ignored), use_tuple);
  }
}

// HTTP: answers each request head with a fixed-size body, "GET /N" -> N bytes of 'h' (at most
// 64 KiB; "GET /hold": hold_response), keeping the connection alive the way HTTP/1.1 (or an
// HTTP/1.0 keep-alive) asks. Request bodies are not expected (GET only) and not read. One buffer
// per connection. `Stream` is the plain socket or the TLS stream over it.
template <typename Stream>
asio::awaitable<void> serve_http(Stream& socket, std::string_view first_bytes) {
  std::string pending(first_bytes);
  std::string reply;
  std::array<char, 4096> chunk;
  while (true) {
    const std::size_t end = pending.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (pending.size() > 64 * 1024) {
        co_return;  // not HTTP as this origin knows it
      }
      auto [error, n] = co_await socket.async_read_some(asio::buffer(chunk), use_tuple);
      if (error) {
        co_return;
      }
      pending.append(chunk.data(), n);
      continue;
    }
    const std::string_view head(pending.data(), end + 4);
    if (head.find(" /hold ") != std::string_view::npos) {
      co_await hold_response(socket);
      co_return;
    }
    // The body size is the path's number: "GET /32 HTTP/1.1".
    std::size_t body = 0;
    const std::size_t slash = head.find(" /");
    if (slash != std::string_view::npos) {
      std::from_chars(head.data() + slash + 2, head.data() + head.size(), body);
    }
    body = std::min<std::size_t>(body, 64 * 1024);
    const bool http10 = head.find(" HTTP/1.0\r\n") != std::string_view::npos;
    const bool close =
        connection_says(head, "close") || (http10 && !connection_says(head, "keep-alive"));
    reply = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
            std::to_string(body) + "\r\n" +
            (close    ? "Connection: close\r\n"
             : http10 ? "Connection: keep-alive\r\n"
                      : "") +
            "\r\n";
    reply.append(body, 'h');
    pending.erase(0, end + 4);
    auto [error, written] = co_await asio::async_write(socket, asio::buffer(reply), use_tuple);
    if (error || close) {
      co_return;
    }
  }
}

// A TLS session: the handshake, then HTTP/2 when the client chose h2 by ALPN, else HTTP/1.1,
// until the client goes. The client closes without close_notify as often as with it, so the end
// is not checked.
asio::awaitable<void> serve_tls_http(tcp::socket& socket, std::shared_ptr<asio::ssl::context> tls) {
  tls_stream stream(socket, *tls);
  auto [error] = co_await stream.async_handshake(asio::ssl::stream_base::server, use_tuple);
  if (error) {
    co_return;
  }
  if (chosen_protocol(stream.native_handle()) == "h2") {
    co_await serve_h2(stream);
  } else {
    co_await serve_http(stream, std::string_view());
  }
}

// One client connection: read the role byte (with whatever follows it), then serve that role.
// With TLS configured, the first byte is peeked first, so a TLS ClientHello reaches OpenSSL whole.
asio::awaitable<void> origin_session(tcp::socket socket,
                                     std::shared_ptr<const std::vector<char>> chunk,
                                     std::shared_ptr<asio::ssl::context> tls) {
  std::array<char, 512> buffer;
  if (tls) {
    auto [peek_error, peeked] = co_await socket.async_receive(asio::buffer(buffer.data(), 1),
                                                              tcp::socket::message_peek, use_tuple);
    if (peek_error || peeked == 0) {
      co_return;
    }
    if (buffer[0] == tls_handshake_record) {
      co_await serve_tls_http(socket, tls);
      co_return;
    }
  }
  auto [error, n] = co_await socket.async_read_some(asio::buffer(buffer), use_tuple);
  if (error || n == 0) {
    co_return;
  }
  switch (buffer[0]) {
    case origin_echo:
      co_await serve_echo(socket, buffer, n);
      break;
    case origin_source:
      co_await serve_source(socket, chunk);
      break;
    case origin_sink:
      co_await serve_sink(socket, chunk->size());
      break;
    case origin_http:
      co_await serve_http(socket, std::string_view(buffer.data(), n));
      break;
    default:
      break;  // unknown role: close
  }
}

asio::awaitable<void> accept_loop(tcp::acceptor acceptor,
                                  std::shared_ptr<const std::vector<char>> chunk,
                                  std::shared_ptr<asio::ssl::context> tls) {
  asio::steady_timer backoff(acceptor.get_executor());
  while (true) {
    auto [error, socket] = co_await acceptor.async_accept(use_tuple);
    if (error == asio::error::operation_aborted) {
      co_return;
    }
    if (error) {
      // Out of descriptors or similar: wait rather than spin, the clients will retry.
      backoff.expires_after(std::chrono::milliseconds(10));
      co_await backoff.async_wait(use_tuple);
      continue;
    }
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    asio::co_spawn(acceptor.get_executor(), origin_session(std::move(socket), chunk, tls),
                   asio::detached);
  }
}

// DNS over UDP for --dns: every query for A gets one answer, 127.0.0.1 (TTL one hour), every
// other type an empty NOERROR answer (a name with no such records). Enough for c-ares and glibc
// to resolve --connect-host to the origin; not a general DNS server (one question per query, no
// compression, no EDNS in the reply).
asio::awaitable<void> dns_loop(asio::ip::udp::socket socket) {
  std::array<unsigned char, 1500> query;
  std::vector<unsigned char> reply;
  asio::ip::udp::endpoint client;
  while (true) {
    auto [error, n] = co_await socket.async_receive_from(asio::buffer(query), client, use_tuple);
    if (error == asio::error::operation_aborted) {
      co_return;
    }
    // Header (12 bytes) with exactly one question.
    if (error || n < 12 || query[4] != 0 || query[5] != 1) {
      continue;
    }
    std::size_t at = 12;
    while (at < n && query[at] != 0 && query[at] < 64) {
      at += 1 + query[at];
    }
    if (at + 5 > n || query[at] != 0) {
      continue;  // compressed or truncated question: not from a resolver we serve
    }
    const std::size_t question_end = at + 5;  // the root label, QTYPE, QCLASS
    const bool type_a = query[at + 1] == 0 && query[at + 2] == 1;
    reply.assign(query.begin(), query.begin() + static_cast<std::ptrdiff_t>(question_end));
    reply[2] = static_cast<unsigned char>(0x80 | (query[2] & 0x01));  // QR, opcode 0, RD copied
    reply[3] = 0x80;                                                  // RA, NOERROR
    reply[6] = 0;
    reply[7] = type_a ? 1 : 0;                        // ANCOUNT
    reply[8] = reply[9] = reply[10] = reply[11] = 0;  // NSCOUNT, ARCOUNT (the OPT is dropped)
    if (type_a) {
      // The name as a pointer to the question (offset 12), A, IN, TTL 3600, 4 bytes: 127.0.0.1.
      const unsigned char answer[] = {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 127, 0, 0, 1};
      reply.insert(reply.end(), std::begin(answer), std::end(answer));
    }
    boost::system::error_code ignored;
    socket.send_to(asio::buffer(reply), client, 0, ignored);
  }
}

// Write to a temporary name and rename, so a script polling the file never reads half of it.
bool write_port_file(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream file(temporary, std::ios::trunc);
    if (!(file << text << '\n')) {
      return false;
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  return !error;
}

}  // namespace

int run_origin(const origin_options& options) {
  asio::io_context context(1);

  std::shared_ptr<asio::ssl::context> tls;
  if (!options.tls_certificate_file.empty()) {
    try {
      tls = make_server_tls_context(options.tls_certificate_file, options.tls_key_file);
    } catch (const boost::system::system_error& error) {
      std::fprintf(stderr, "sandgate-load origin: cannot load the TLS certificate or key: %s\n",
                   error.what());
      return 1;
    }
  }

  tcp::acceptor acceptor(context);
  boost::system::error_code error;
  acceptor.open(options.listen.protocol(), error);
  if (!error) {
    acceptor.set_option(tcp::acceptor::reuse_address(true), error);
  }
  if (!error) {
    acceptor.bind(options.listen, error);
  }
  if (!error) {
    // The kernel caps this at net.core.somaxconn; a deep queue keeps bursts of 256 setups or
    // 10,000 idle opens from being dropped into SYN retransmits (a 1 s stall each).
    acceptor.listen(asio::socket_base::max_listen_connections, error);
  }
  if (error) {
    std::fprintf(stderr, "sandgate-load origin: cannot listen on %s: %s\n",
                 endpoint_text(options.listen).c_str(), error.message().c_str());
    return 1;
  }
  const std::string bound = endpoint_text(acceptor.local_endpoint());
  // The DNS socket is bound before the port file appears, so whoever reads it can query at once.
  if (options.dns) {
    asio::ip::udp::socket dns(context);
    const auto bound_at = acceptor.local_endpoint();
    dns.open(bound_at.address().is_v4() ? asio::ip::udp::v4() : asio::ip::udp::v6(), error);
    if (!error) {
      dns.bind(asio::ip::udp::endpoint(bound_at.address(), bound_at.port()), error);
    }
    if (error) {
      std::fprintf(stderr, "sandgate-load origin: cannot answer DNS on UDP %s: %s\n", bound.c_str(),
                   error.message().c_str());
      return 1;
    }
    asio::co_spawn(context, dns_loop(std::move(dns)), asio::detached);
  }

  if (!options.port_file.empty() && !write_port_file(options.port_file, bound)) {
    std::fprintf(stderr, "sandgate-load origin: cannot write --port-file %s\n",
                 options.port_file.c_str());
    return 1;
  }
  std::printf("sandgate-load origin listening on %s\n", bound.c_str());
  std::fflush(stdout);

  auto chunk = std::make_shared<const std::vector<char>>(options.chunk_bytes, 'x');
  asio::co_spawn(context, accept_loop(std::move(acceptor), chunk, tls), asio::detached);

  // Stop on a signal or at the end of the lifetime, whichever is first.
  asio::signal_set signals(context, SIGINT, SIGTERM);
  signals.async_wait([&context](const boost::system::error_code&, int) { context.stop(); });
  asio::steady_timer lifetime(context);
  lifetime.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(options.lifetime_s)));
  lifetime.async_wait([&context](const boost::system::error_code& e) {
    if (!e) {
      context.stop();
    }
  });
  context.run();
  return 0;
}

}  // namespace sandgate::load
