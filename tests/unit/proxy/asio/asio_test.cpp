// Boost.Asio and Beast compiled once for the whole tree (proxy/asio/asio_impl.cpp) and Asio's TLS
// layer (ssl_impl.cpp), used the way the gate uses them: C++20 coroutines on one io_context,
// completions as values (as_tuple), an end of stream as a value rather than an exception; a TLS
// handshake that verifies the peer's certificate and name succeeds, and one that names another
// host fails with an error code. Real loopback sockets; the certificates come from openssl.
#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <string>
#include <utility>

#include "proxy/asio/use_tuple.hpp"
#include "tests/support/temporary_folder.hpp"
#include "tests/support/test_certificates.hpp"

namespace sandgate {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using asio::ip::tcp;
using boost::system::error_code;

// A connected loopback pair on `io`.
std::pair<tcp::socket, tcp::socket> connected_pair(asio::io_context& io) {
  tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  tcp::socket client(io);
  client.connect(acceptor.local_endpoint());
  return {std::move(client), acceptor.accept()};
}

asio::awaitable<void> send_then_end(tcp::socket socket, std::string text) {
  auto [error, written] = co_await asio::async_write(socket, asio::buffer(text), use_tuple);
  EXPECT_FALSE(error) << error.message();
  EXPECT_EQ(written, text.size());
  socket.shutdown(tcp::socket::shutdown_send);
}

// Reads in small pieces until the stream ends; `end` gets how it ended.
asio::awaitable<void> read_to_end(tcp::socket socket, std::string& out, error_code& end) {
  char piece[3];
  for (;;) {
    auto [error, got] = co_await socket.async_read_some(asio::buffer(piece), use_tuple);
    out.append(piece, got);
    if (error) {
      end = error;
      co_return;
    }
  }
}

TEST(Asio, CoroutinesCarryAStreamAndItsEndAsAValue) {
  asio::io_context io;
  auto [client, server] = connected_pair(io);
  std::string received;
  error_code end;
  asio::co_spawn(io, send_then_end(std::move(client), "through the compiled Asio"), asio::detached);
  asio::co_spawn(io, read_to_end(std::move(server), received, end), asio::detached);
  io.run();
  EXPECT_EQ(received, "through the compiled Asio");
  EXPECT_EQ(end, asio::error::eof);
}

using TlsStream = ssl::stream<tcp::socket>;

asio::awaitable<void> serve_tls(TlsStream& stream, error_code& result) {
  auto [error] = co_await stream.async_handshake(ssl::stream_base::server, use_tuple);
  result = error;
  if (!error) {
    co_await asio::async_write(stream, asio::buffer(std::string_view("hello")), use_tuple);
  }
}

asio::awaitable<void> connect_tls(TlsStream& stream, error_code& result, std::string& read) {
  auto [error] = co_await stream.async_handshake(ssl::stream_base::client, use_tuple);
  result = error;
  if (!error) {
    char buffer[16];
    auto [read_error, got] = co_await stream.async_read_some(asio::buffer(buffer), use_tuple);
    read.assign(buffer, got);
  }
}

class AsioTls : public ::testing::Test {
 protected:
  void SetUp() override {
    certificates_ = testing::make_test_certificates(folder_.path(), {"DNS:origin.test"});
  }

  // A handshake with a server for origin.test, the client verifying the peer as `name`. What
  // each side's handshake gave, and what the client read after it.
  struct Outcome {
    error_code server, client;
    std::string read;
  };
  Outcome handshake_as(const std::string& name) {
    ssl::context server_tls(ssl::context::tls_server);
    server_tls.use_certificate_chain_file(certificates_.certificate);
    server_tls.use_private_key_file(certificates_.key, ssl::context::pem);
    ssl::context client_tls(ssl::context::tls_client);
    client_tls.load_verify_file(certificates_.ca);
    client_tls.set_verify_mode(ssl::verify_peer);
    asio::io_context io;
    auto [client_socket, server_socket] = connected_pair(io);
    TlsStream client(std::move(client_socket), client_tls);
    TlsStream server(std::move(server_socket), server_tls);
    SSL_set_tlsext_host_name(client.native_handle(), name.c_str());
    SSL_set1_host(client.native_handle(), name.c_str());
    Outcome outcome;
    asio::co_spawn(io, serve_tls(server, outcome.server), asio::detached);
    asio::co_spawn(io, connect_tls(client, outcome.client, outcome.read), asio::detached);
    io.run();
    return outcome;
  }

  testing::TemporaryFolder folder_{"asio-tls"};
  testing::TestCertificates certificates_;
};

TEST_F(AsioTls, AVerifiedHandshakeCarriesData) {
  const Outcome outcome = handshake_as("origin.test");
  EXPECT_FALSE(outcome.client) << outcome.client.message();
  EXPECT_FALSE(outcome.server) << outcome.server.message();
  EXPECT_EQ(outcome.read, "hello");
}

TEST_F(AsioTls, ACertificateForAnotherNameFailsTheHandshakeAsAnErrorCode) {
  const Outcome outcome = handshake_as("other.test");
  ASSERT_TRUE(outcome.client);
  EXPECT_EQ(outcome.client.category(), asio::error::get_ssl_category()) << outcome.client.message();
  EXPECT_TRUE(outcome.server) << "the server finished a handshake the client refused";
  EXPECT_EQ(outcome.read, "");
}

}  // namespace
}  // namespace sandgate
