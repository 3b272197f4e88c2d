// The shared HTTP/2 origin connections of a worker (proxy/session/h2_origin_pool.hpp), with real
// loopback TLS connections to a peer that completes the handshake and then says nothing (no
// SETTINGS: the gate's codec allows its own 100 streams): what is shared and what is not, every
// bound exceeded, the idle lifetime, a reload's retirement and the drain. The end-to-end tests
// (tests/e2e/http2_origin_pool_test.cpp) run it with real HTTP/2 origins and clients.
#include "proxy/session/h2_origin_pool.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "tests/support/shell_command.hpp"
#include "tests/support/test_certificates.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
namespace h2 = exchange::h2;
using asio::ip::tcp;
using namespace std::chrono_literals;

// A borrower's stream: what the connection told it.
struct RecordingSink final : H2OriginStreamSink {
  void on_origin_event(h2::ClientEvent& event) override { events.push_back(event); }
  bool closed() const {
    return !events.empty() && std::holds_alternative<h2::StreamClosedEvent>(events.back());
  }
  std::vector<h2::ClientEvent> events;
};

h2::RequestHead get_head() {
  h2::RequestHead head;
  head.method = "GET";
  head.scheme = "https";
  head.authority = "a.test";
  head.path = "/";
  return head;
}

class H2OriginPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/h2-origin-pool-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    const auto files = testing::make_test_certificates(folder_, {"DNS:a.test"});
    server_tls_.use_certificate_chain_file(files.certificate);
    server_tls_.use_private_key_file(files.key, asio::ssl::context::pem);
    client_tls_.set_verify_mode(asio::ssl::verify_none);
  }
  void TearDown() override { testing::run_shell("rm -rf " + folder_); }

  // A TLS connection to the loopback peer, handshaken both ways, as a secured origin of `epoch`.
  std::unique_ptr<SecuredOrigin> connection(std::uint64_t epoch) {
    tcp::socket socket(io_);
    socket.connect(acceptor_.local_endpoint());
    auto& peer = peers_.emplace_back(
        std::make_unique<asio::ssl::stream<tcp::socket>>(acceptor_.accept(), server_tls_));
    auto origin = std::make_unique<SecuredOrigin>(std::move(socket));
    origin->tls.emplace(origin->socket, client_tls_);
    origin->endpoint = acceptor_.local_endpoint();
    origin->epoch = epoch;
    origin->h2_offered = true;
    origin->h2_chosen = true;
    int done = 0;
    peer->async_handshake(asio::ssl::stream_base::server, [&](auto) { ++done; });
    origin->tls->async_handshake(asio::ssl::stream_base::client, [&](auto) { ++done; });
    run_until([&] { return done == 2; });
    return origin;
  }
  template <typename Predicate>
  bool run_until(Predicate done) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io_.run_for(10ms);
      io_.restart();
    }
    return done();
  }

  std::string folder_;
  asio::io_context io_;
  asio::ssl::context server_tls_{asio::ssl::context::tls_server};
  asio::ssl::context client_tls_{asio::ssl::context::tls_client};
  tcp::acceptor acceptor_{io_, tcp::endpoint(asio::ip::address_v4::loopback(), 0)};
  std::vector<std::unique_ptr<asio::ssl::stream<tcp::socket>>> peers_;
};

TEST_F(H2OriginPoolTest, SharedPerHostAndPortUpToItsBoundsAndNeverAcrossHosts) {
  H2OriginPool pool;
  std::vector<std::shared_ptr<H2Origin>> kept;
  for (std::size_t i = 0; i < H2OriginPool::kPerOrigin; ++i) {
    kept.push_back(pool.adopt("a.test:443", connection(1), true, 1));
    EXPECT_TRUE(kept.back()->shared());
  }
  // Past the bound of its host:port: its dialler's alone.
  auto over_origin = pool.adopt("a.test:443", connection(1), true, 1);
  EXPECT_FALSE(over_origin->shared());
  EXPECT_EQ(pool.size(), H2OriginPool::kPerOrigin);
  EXPECT_NE(pool.take("a.test:443"), nullptr);
  EXPECT_EQ(pool.take("b.test:443"), nullptr);
  EXPECT_EQ(pool.take("a.test:8443"), nullptr);
  // Past the worker's bound: another host's connection is not shared either.
  for (std::size_t i = H2OriginPool::kPerOrigin; i < H2OriginPool::kTotal; ++i) {
    kept.push_back(pool.adopt("host" + std::to_string(i / H2OriginPool::kPerOrigin) + ".test:443",
                              connection(1), true, 1));
    EXPECT_TRUE(kept.back()->shared()) << i;
  }
  EXPECT_EQ(pool.size(), H2OriginPool::kTotal);
  EXPECT_FALSE(pool.has_room_for("z.test:443"));
  EXPECT_FALSE(pool.adopt("z.test:443", connection(1), true, 1)->shared());
  EXPECT_EQ(pool.take("z.test:443"), nullptr);
}

TEST_F(H2OriginPoolTest, NotSharedWhenReachedByAddressOrSecuredUnderOlderRules) {
  H2OriginPool pool;
  EXPECT_FALSE(pool.adopt("a.test:443", connection(2), false, 2)->shared());  // by address
  EXPECT_FALSE(pool.adopt("a.test:443", connection(1), true, 2)->shared());   // older epoch
  EXPECT_FALSE(pool.adopt("a.test:443", connection(0), true, 2)->shared());   // never current
  EXPECT_EQ(pool.take("a.test:443"), nullptr);
  EXPECT_EQ(pool.size(), 0u);
}

TEST_F(H2OriginPoolTest, TheBusiestConnectionWithRoomIsTakenFirst) {
  RecordingSink sink;  // (outlives the pool, which tells it when it closes)
  H2OriginPool pool;
  auto quiet = pool.adopt("a.test:443", connection(1), true, 1);
  auto busy = pool.adopt("a.test:443", connection(1), true, 1);
  ASSERT_TRUE(busy->open_stream(get_head(), true, sink));
  EXPECT_EQ(pool.take("a.test:443"), busy);
  busy->release_stream(1, h2::ErrorCode::cancel);
  EXPECT_EQ(busy->borrowed_streams(), 0u);
}

TEST_F(H2OriginPoolTest, AnIdleConnectionGoesAfterItsLifetimeAndABusyOneStays) {
  RecordingSink sink;  // (outlives the pool, which tells it when it closes)
  H2OriginPool pool(50ms);
  auto idle = pool.adopt("a.test:443", connection(1), true, 1);
  auto busy = pool.adopt("a.test:443", connection(1), true, 1);
  ASSERT_TRUE(busy->open_stream(get_head(), true, sink));
  EXPECT_TRUE(run_until([&] { return !idle->usable(); }));
  io_.run_for(100ms);
  EXPECT_TRUE(busy->usable());
  EXPECT_EQ(pool.size(), 1u);
  EXPECT_EQ(pool.take("a.test:443"), busy);
}

TEST_F(H2OriginPoolTest, AReloadRetiresEveryConnectionAndABusyOneGoesAfterItsLastStream) {
  RecordingSink sink;  // (outlives the pool, which tells it when it closes)
  H2OriginPool pool;
  auto idle = pool.adopt("a.test:443", connection(1), true, 1);
  auto busy = pool.adopt("a.test:443", connection(1), true, 1);
  ASSERT_TRUE(busy->open_stream(get_head(), true, sink));
  pool.forget_all();
  EXPECT_EQ(pool.take("a.test:443"), nullptr);
  EXPECT_FALSE(busy->open_stream(get_head(), true, sink));
  // The idle one goes now (a GOAWAY, then closed); the busy one keeps its stream until released.
  EXPECT_TRUE(run_until([&] { return pool.size() == 1; }));
  EXPECT_FALSE(sink.closed());
  busy->release_stream(1, h2::ErrorCode::cancel);
  EXPECT_TRUE(run_until([&] { return pool.size() == 0; }));
}

TEST_F(H2OriginPoolTest, TheDrainClosesEveryConnectionItsStreamsHearSoAndNoneIsSharedAfter) {
  RecordingSink sink;  // (outlives the pool, which tells it when it closes)
  H2OriginPool pool;
  auto busy = pool.adopt("a.test:443", connection(1), true, 1);
  ASSERT_TRUE(busy->open_stream(get_head(), true, sink));
  pool.close();
  EXPECT_FALSE(busy->usable());
  ASSERT_TRUE(sink.closed());
  EXPECT_EQ(std::get<h2::StreamClosedEvent>(sink.events.back()).code,
            h2::ErrorCode::internal_error);
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_FALSE(pool.adopt("a.test:443", connection(1), true, 1)->shared());
}

}  // namespace
}  // namespace sandgate::session
