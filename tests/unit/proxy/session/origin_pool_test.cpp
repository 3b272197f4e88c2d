// The pool of idle origin connections (proxy/session/origin_pool.hpp) with real loopback TCP
// connections under TLS streams that never handshake: what the pool keeps, hands out, watches
// and ends does not depend on the handshake (the inspection tests run it with real TLS origins).
#include "proxy/session/origin_pool.hpp"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace sandgate::session {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;

class OriginPoolTest : public ::testing::Test {
 protected:
  // A connection to a loopback peer (kept in peers_[n], n returned through `peer`), as a
  // secured origin of `epoch`.
  std::unique_ptr<SecuredOrigin> connection(std::uint64_t epoch, std::size_t* peer = nullptr) {
    tcp::socket socket(io_);
    socket.connect(acceptor_.local_endpoint());
    peers_.push_back(acceptor_.accept());
    if (peer != nullptr) {
      *peer = peers_.size() - 1;
    }
    auto origin = std::make_unique<SecuredOrigin>(std::move(socket));
    origin->tls.emplace(origin->socket, tls_);
    origin->endpoint = acceptor_.local_endpoint();
    origin->epoch = epoch;
    return origin;
  }
  // True when the peer's end has been closed by the pool (it reads end of stream).
  bool closed_by_pool(std::size_t peer) {
    char byte;
    boost::system::error_code error;
    peers_[peer].non_blocking(false);
    peers_[peer].read_some(asio::buffer(&byte, 1), error);
    return error == asio::error::eof || error == asio::error::connection_reset;
  }
  // Runs the pool's handlers until `done` or two seconds.
  template <typename Predicate>
  bool run_until(Predicate done) {
    const auto deadline = std::chrono::steady_clock::now() + 2s;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io_.run_for(10ms);
      io_.restart();
    }
    return done();
  }

  asio::io_context io_;
  asio::ssl::context tls_{asio::ssl::context::tls_client};
  tcp::acceptor acceptor_{io_, tcp::endpoint(asio::ip::address_v4::loopback(), 0)};
  std::vector<tcp::socket> peers_;
};

TEST_F(OriginPoolTest, TheMostRecentlyKeptConnectionOfItsOwnHostAndPortIsTakenOnce) {
  OriginPool pool;
  auto first = connection(pool.epoch());
  auto second = connection(pool.epoch());
  const int first_fd = first->socket.native_handle();
  const int second_fd = second->socket.native_handle();
  pool.park("a.test:443", std::move(first));
  pool.park("a.test:443", std::move(second));
  EXPECT_EQ(pool.size(), 2u);
  EXPECT_EQ(pool.take("b.test:443"), nullptr);
  EXPECT_EQ(pool.take("a.test:8443"), nullptr);
  auto taken = pool.take("a.test:443");
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(taken->socket.native_handle(), second_fd);
  EXPECT_EQ(taken->endpoint, acceptor_.local_endpoint());
  taken = pool.take("a.test:443");
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(taken->socket.native_handle(), first_fd);
  EXPECT_EQ(pool.take("a.test:443"), nullptr);
  EXPECT_EQ(pool.size(), 0u);
  // Taken means the pool's watches are off it: running them closes nothing.
  io_.run_for(50ms);
  EXPECT_TRUE(taken->socket.is_open());
}

// A connection is given only to a client whose ALPN offer it serves as a fresh one would: one on
// which the gate never offered h2 not to a client that offers it (the origin might have chosen
// h2); one on which the origin declined h2 to either kind. Those passed over stay kept.
TEST_F(OriginPoolTest, AConnectionIsTakenOnlyByAClientWhoseAlpnOfferItServes) {
  struct Case {
    bool offered;
    bool chosen;
    ClientAlpn client;
    bool served;
  };
  for (const Case c :
       {Case{false, false, ClientAlpn::http1, true}, Case{false, false, ClientAlpn::h2, false},
        Case{true, false, ClientAlpn::http1, true}, Case{true, false, ClientAlpn::h2, true},
        Case{true, true, ClientAlpn::http1, false}, Case{true, true, ClientAlpn::h2, true},
        Case{false, false, ClientAlpn::unknown, true}}) {
    SecuredOrigin origin{tcp::socket(io_)};
    origin.h2_offered = c.offered;
    origin.h2_chosen = c.chosen;
    EXPECT_EQ(serves(origin, c.client), c.served)
        << c.offered << c.chosen << static_cast<int>(c.client);
  }

  OriginPool pool;
  auto http1_only = connection(pool.epoch());
  auto declined = connection(pool.epoch());
  declined->h2_offered = true;
  const int declined_fd = declined->socket.native_handle();
  pool.park("a.test:443", std::move(declined));
  pool.park("a.test:443", std::move(http1_only));  // the most recent
  auto taken = pool.take("a.test:443", ClientAlpn::h2);
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(taken->socket.native_handle(), declined_fd);
  EXPECT_EQ(pool.take("a.test:443", ClientAlpn::h2), nullptr);
  EXPECT_EQ(pool.size(), 1u);
  EXPECT_NE(pool.take("a.test:443", ClientAlpn::http1), nullptr);
  EXPECT_EQ(pool.size(), 0u);
}

TEST_F(OriginPoolTest, PastItsLimitPerOriginTheOldestGoesAndPastTheTotalNoneIsKept) {
  OriginPool pool;
  std::size_t oldest = 0;
  pool.park("a.test:443", connection(pool.epoch(), &oldest));
  for (std::size_t i = 1; i < OriginPool::kPerOrigin; ++i) {
    pool.park("a.test:443", connection(pool.epoch()));
  }
  EXPECT_EQ(pool.size(), OriginPool::kPerOrigin);
  pool.park("a.test:443", connection(pool.epoch()));
  EXPECT_EQ(pool.size(), OriginPool::kPerOrigin);
  EXPECT_TRUE(closed_by_pool(oldest));

  for (std::size_t host = 1; pool.size() < OriginPool::kTotal; ++host) {
    for (std::size_t i = 0; i < OriginPool::kPerOrigin && pool.size() < OriginPool::kTotal; ++i) {
      pool.park("host" + std::to_string(host) + ".test:443", connection(pool.epoch()));
    }
  }
  std::size_t refused = 0;
  pool.park("one-more.test:443", connection(pool.epoch(), &refused));
  EXPECT_EQ(pool.size(), OriginPool::kTotal);
  EXPECT_EQ(pool.take("one-more.test:443"), nullptr);
  EXPECT_TRUE(closed_by_pool(refused));
}

TEST_F(OriginPoolTest, AnOriginThatClosesOrSpeaksWhileIdleIsNeverHandedOut) {
  OriginPool pool;
  std::size_t peer = 0;
  // Closed by the origin: the watch ends it.
  pool.park("a.test:443", connection(pool.epoch(), &peer));
  peers_[peer].close();
  EXPECT_TRUE(run_until([&] { return pool.size() == 0; }));
  // Bytes nobody asked for: the watch ends it.
  pool.park("a.test:443", connection(pool.epoch(), &peer));
  asio::write(peers_[peer], asio::buffer("x", 1));
  EXPECT_TRUE(run_until([&] { return pool.size() == 0; }));
  EXPECT_TRUE(closed_by_pool(peer));
  // Closed, and taken before the watch ran: take() looks itself.
  pool.park("a.test:443", connection(pool.epoch(), &peer));
  peers_[peer].close();
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(pool.take("a.test:443"), nullptr);
}

TEST_F(OriginPoolTest, AnIdleConnectionEndsAfterItsLifetime) {
  OriginPool pool(200ms);
  std::size_t peer = 0;
  pool.park("a.test:443", connection(pool.epoch(), &peer));
  io_.run_for(50ms);
  io_.restart();
  EXPECT_EQ(pool.size(), 1u);
  EXPECT_TRUE(run_until([&] { return pool.size() == 0; }));
  EXPECT_TRUE(closed_by_pool(peer));
}

TEST_F(OriginPoolTest, AReloadEndsEveryIdleConnectionAndOnesSecuredBeforeItAreNotKept) {
  OriginPool pool;
  const std::uint64_t before = pool.epoch();
  std::size_t kept = 0;
  pool.park("a.test:443", connection(before, &kept));
  auto secured_before = connection(before);
  pool.forget_all();
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_TRUE(closed_by_pool(kept));
  EXPECT_NE(pool.epoch(), before);
  pool.park("a.test:443", std::move(secured_before));
  EXPECT_EQ(pool.size(), 0u);
  pool.park("a.test:443", connection(pool.epoch()));
  EXPECT_EQ(pool.size(), 1u);
  // The drain: everything goes, and nothing is kept after it.
  pool.close();
  EXPECT_EQ(pool.size(), 0u);
  pool.park("a.test:443", connection(pool.epoch()));
  EXPECT_EQ(pool.size(), 0u);
}

TEST_F(OriginPoolTest, AConnectionWithBytesOpenSslHasNotReadIsNotKept) {
  OriginPool pool;
  auto origin = connection(pool.epoch());
  EXPECT_TRUE(nothing_unread(*origin->tls));
  // As if the origin's next record had reached OpenSSL's side of the stream.
  BIO* pending = BIO_new(BIO_s_mem());
  ASSERT_EQ(BIO_write(pending, "\x17\x03\x03", 3), 3);
  SSL_set0_rbio(origin->tls->native_handle(), pending);
  EXPECT_FALSE(nothing_unread(*origin->tls));
  pool.park("a.test:443", std::move(origin));
  EXPECT_EQ(pool.size(), 0u);
}

}  // namespace
}  // namespace sandgate::session
