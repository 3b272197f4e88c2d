// Echo, source and sink behind one listener (see origin_server.hpp).
#include "bench/load/origin_server.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "bench/load/loopback_endpoint.hpp"

namespace sandgate::load {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

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

// One client connection: read the role byte (with whatever follows it), then serve that role.
asio::awaitable<void> origin_session(tcp::socket socket,
                                     std::shared_ptr<const std::vector<char>> chunk) {
  std::array<char, 512> buffer;
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
    default:
      break;  // unknown role: close
  }
}

asio::awaitable<void> accept_loop(tcp::acceptor acceptor,
                                  std::shared_ptr<const std::vector<char>> chunk) {
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
    asio::co_spawn(acceptor.get_executor(), origin_session(std::move(socket), chunk),
                   asio::detached);
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
  if (!options.port_file.empty() && !write_port_file(options.port_file, bound)) {
    std::fprintf(stderr, "sandgate-load origin: cannot write --port-file %s\n",
                 options.port_file.c_str());
    return 1;
  }
  std::printf("sandgate-load origin listening on %s\n", bound.c_str());
  std::fflush(stdout);

  auto chunk = std::make_shared<const std::vector<char>>(options.chunk_bytes, 'x');
  asio::co_spawn(context, accept_loop(std::move(acceptor), chunk), asio::detached);

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
