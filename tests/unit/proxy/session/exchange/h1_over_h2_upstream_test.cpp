// An HTTP/1.1 exchange over a stream of an HTTP/2 origin connection
// (proxy/session/exchange/h1_over_h2_upstream.hpp), against a real loopback TLS connection whose
// far end is the gate's own HTTP/2 server codec: what the origin gets for an HTTP/1.1 request
// (connection-specific fields out, either body framing as DATA and END_STREAM), what the HTTP/1.1
// side reads for its answers (interim heads, its length or chunks), a head over the bound
// refused, and a stream the origin resets read as a reset. The end-to-end test
// (tests/e2e/http1_to_h2_origin_test.cpp) runs it with curl and Node's http2 origin.
#include "proxy/session/exchange/h1_over_h2_upstream.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "proxy/session/exchange/h2/server_codec.hpp"
#include "proxy/session/h2_origin_pool.hpp"
#include "tests/support/shell_command.hpp"
#include "tests/support/test_certificates.hpp"

namespace sandgate::session::exchange {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;

// The origin: the gate's HTTP/2 server codec on the far end of the TLS connection.
struct Origin {
  explicit Origin(asio::ssl::stream<tcp::socket>& s) : tls(s) {}
  void start() {
    tls.async_read_some(asio::buffer(buffer),
                        [this](boost::system::error_code error, std::size_t n) {
                          if (error) {
                            return;
                          }
                          codec.receive(std::string_view(buffer.data(), n));
                          while (auto event = codec.next_event()) {
                            events.push_back(std::move(*event));
                          }
                          flush();
                          start();
                        });
  }
  void flush() {
    if (writing || codec.pending_output().empty()) {
      return;
    }
    writing = true;
    out = std::string(codec.pending_output());
    asio::async_write(tls, asio::buffer(out), [this](boost::system::error_code, std::size_t) {
      codec.consume_output(out.size());
      writing = false;
      flush();
    });
  }
  const h2::RequestHeadEvent* head() const {
    for (const auto& event : events) {
      if (const auto* head = std::get_if<h2::RequestHeadEvent>(&event)) {
        return head;
      }
    }
    return nullptr;
  }
  std::string body() const {
    std::string body;
    for (const auto& event : events) {
      if (const auto* data = std::get_if<h2::DataEvent>(&event)) {
        body += data->bytes;
      }
    }
    return body;
  }
  bool ended() const {
    for (const auto& event : events) {
      if (std::holds_alternative<h2::EndEvent>(event)) {
        return true;
      }
    }
    return false;
  }

  asio::ssl::stream<tcp::socket>& tls;
  h2::ServerCodec codec;
  std::array<char, 16384> buffer{};
  std::string out;
  bool writing = false;
  std::vector<h2::ServerEvent> events;
};

class H1OverH2UpstreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/h1-over-h2-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
    const auto files = testing::make_test_certificates(folder_, {"DNS:a.test"});
    server_tls_.use_certificate_chain_file(files.certificate);
    server_tls_.use_private_key_file(files.key, asio::ssl::context::pem);
    client_tls_.set_verify_mode(asio::ssl::verify_none);
    connection_ = pool_.adopt("a.test:443", secured(), true, 1);
    origin_.emplace(*peer_);
    origin_->start();
    origin_->flush();
  }
  void TearDown() override {
    bridge_.reset();
    pool_.close();
    run_until([] { return false; }, 50ms);
    testing::run_shell("rm -rf " + folder_);
  }

  // A TLS connection to the loopback peer, handshaken both ways, as a secured origin.
  std::unique_ptr<SecuredOrigin> secured() {
    tcp::socket socket(io_);
    socket.connect(acceptor_.local_endpoint());
    peer_ = std::make_unique<asio::ssl::stream<tcp::socket>>(acceptor_.accept(), server_tls_);
    auto origin = std::make_unique<SecuredOrigin>(std::move(socket));
    origin->tls.emplace(origin->socket, client_tls_);
    origin->endpoint = acceptor_.local_endpoint();
    origin->epoch = 1;
    origin->h2_offered = true;
    origin->h2_chosen = true;
    int done = 0;
    peer_->async_handshake(asio::ssl::stream_base::server, [&](auto) { ++done; });
    origin->tls->async_handshake(asio::ssl::stream_base::client, [&](auto) { ++done; });
    run_until([&] { return done == 2; });
    return origin;
  }
  template <typename Predicate>
  bool run_until(Predicate done, std::chrono::milliseconds most = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + most;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io_.run_for(5ms);
      io_.restart();
    }
    return done();
  }
  H1OverH2Upstream& bridge(std::size_t head_limit = H1OverH2Upstream::kHeadLimit) {
    bridge_ =
        std::make_unique<H1OverH2Upstream>(io_.get_executor(), connection_, "https", head_limit);
    return *bridge_;
  }
  // Writes `bytes` through the bridge; the error it completed with.
  boost::system::error_code write(const std::string& bytes) {
    std::optional<boost::system::error_code> result;
    asio::async_write(*bridge_, asio::buffer(bytes),
                      [&](boost::system::error_code error, std::size_t) { result = error; });
    run_until([&] { return result.has_value(); });
    return result.value_or(asio::error::timed_out);
  }
  // Reads the bridge until it ends; what it read, and how it ended.
  std::pair<std::string, boost::system::error_code> read_all() {
    std::string text;
    boost::system::error_code end;
    std::array<char, 7000> piece{};
    for (bool reading = true; reading;) {
      std::optional<boost::system::error_code> result;
      bridge_->async_read_some(asio::buffer(piece),
                               [&](boost::system::error_code error, std::size_t n) {
                                 text.append(piece.data(), n);
                                 result = error;
                               });
      run_until([&] { return result.has_value(); });
      end = result.value_or(asio::error::timed_out);
      reading = !end;
    }
    return {text, end};
  }
  h2::StreamId request_stream() {
    run_until([&] { return origin_->head() != nullptr; });
    return origin_->head() != nullptr ? origin_->head()->stream : 0;
  }

  std::string folder_;
  asio::io_context io_;
  asio::ssl::context server_tls_{asio::ssl::context::tls_server};
  asio::ssl::context client_tls_{asio::ssl::context::tls_client};
  tcp::acceptor acceptor_{io_, tcp::endpoint(asio::ip::address_v4::loopback(), 0)};
  std::unique_ptr<asio::ssl::stream<tcp::socket>> peer_;
  H2OriginPool pool_;
  std::shared_ptr<H2Origin> connection_;
  std::optional<Origin> origin_;
  std::unique_ptr<H1OverH2Upstream> bridge_;
};

bool has_field(const h2::FieldList& fields, const std::string& name) {
  return h2::find_field(fields, name) != nullptr;
}

// A GET: its head as HTTP/2 (Host as :authority; Connection, the fields it names, Keep-Alive and
// Proxy-Connection left out; TE kept as trailers), the stream ended with it. The answer without a
// length comes chunked, its trailers dropped.
TEST_F(H1OverH2UpstreamTest, AGetGoesAsAHeadAndItsAnswerWithoutALengthComesChunked) {
  bridge();
  EXPECT_FALSE(
      write("GET /a?b HTTP/1.1\r\nHost: a.test\r\nConnection: keep-alive, x-hop\r\n"
            "X-Hop: 1\r\nKeep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\n"
            "TE: trailers\r\nX-Keep: yes\r\n\r\n"));
  const h2::StreamId id = request_stream();
  ASSERT_NE(id, 0);
  const h2::RequestHead& head = origin_->head()->head;
  EXPECT_TRUE(origin_->head()->end_stream);
  EXPECT_EQ(head.method, "GET");
  EXPECT_EQ(head.scheme, "https");
  EXPECT_EQ(head.authority, "a.test");
  EXPECT_EQ(head.path, "/a?b");
  EXPECT_EQ(*h2::find_field(head.fields, "x-keep"), "yes");
  EXPECT_EQ(*h2::find_field(head.fields, "te"), "trailers");
  for (const char* gone : {"connection", "x-hop", "keep-alive", "proxy-connection", "host"}) {
    EXPECT_FALSE(has_field(head.fields, gone)) << gone;
  }
  origin_->codec.submit_response(id, h2::ResponseHead{200, {{"content-type", "text/plain"}}, {}},
                                 false);
  ASSERT_TRUE(origin_->codec.send_data(id, "hello"));
  origin_->codec.submit_trailers(id, {{"x-t", "1"}});
  origin_->flush();
  const auto [text, end] = read_all();
  EXPECT_EQ(text,
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n"
            "5\r\nhello\r\n0\r\n\r\n");
  EXPECT_EQ(end, asio::error::eof);
}

// A body with a Content-Length goes as DATA then END_STREAM; an interim answer, then the answer
// with its length, read as HTTP/1.1 heads.
TEST_F(H1OverH2UpstreamTest, ASizedBodyGoesAsDataAndTheAnswersLengthIsKept) {
  bridge();
  const std::string body(100000, 'x');
  EXPECT_FALSE(write("POST /up HTTP/1.1\r\nHost: a.test\r\nContent-Length: 100000\r\n\r\n" + body));
  const h2::StreamId id = request_stream();
  ASSERT_NE(id, 0);
  EXPECT_FALSE(origin_->head()->end_stream);
  EXPECT_EQ(origin_->head()->head.content_length, 100000u);
  run_until([&] { return origin_->ended(); });
  EXPECT_EQ(origin_->body(), body);
  origin_->codec.submit_interim(id, h2::ResponseHead{103, {{"link", "</s>"}}, {}});
  origin_->codec.submit_response(id, h2::ResponseHead{201, {{"content-length", "2"}}, {}}, false);
  ASSERT_TRUE(origin_->codec.send_data(id, "ok"));
  origin_->codec.end_stream(id);
  origin_->flush();
  const auto [text, end] = read_all();
  EXPECT_EQ(text,
            "HTTP/1.1 103 Early Hints\r\nlink: </s>\r\n\r\n"
            "HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok");
  EXPECT_EQ(end, asio::error::eof);
}

// A chunked body goes unchunked as DATA, without Transfer-Encoding.
TEST_F(H1OverH2UpstreamTest, AChunkedBodyGoesAsDataWithoutItsFraming) {
  bridge();
  EXPECT_FALSE(
      write("POST /c HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n"
            "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"));
  const h2::StreamId id = request_stream();
  ASSERT_NE(id, 0);
  run_until([&] { return origin_->ended(); });
  EXPECT_EQ(origin_->body(), "abcde");
  EXPECT_FALSE(has_field(origin_->head()->head.fields, "transfer-encoding"));
  EXPECT_FALSE(origin_->head()->head.content_length.has_value());
}

// A head larger than the bound is refused before anything goes to the origin.
TEST_F(H1OverH2UpstreamTest, AHeadOverTheBoundIsRefused) {
  H1OverH2Upstream& upstream = bridge(1024);
  const auto error =
      write("GET / HTTP/1.1\r\nHost: a.test\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n");
  EXPECT_TRUE(error);
  EXPECT_NE(upstream.why().find("larger than 1 KiB"), std::string::npos) << upstream.why();
  run_until([] { return false; }, 50ms);
  EXPECT_EQ(origin_->head(), nullptr);
}

// A stream the origin resets before answering fails the read with that failure, which says why.
TEST_F(H1OverH2UpstreamTest, AStreamTheOriginResetsReadsAsAReset) {
  H1OverH2Upstream& upstream = bridge();
  EXPECT_FALSE(write("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"));
  const h2::StreamId id = request_stream();
  ASSERT_NE(id, 0);
  origin_->codec.reset_stream(id, h2::ErrorCode::internal_error);
  origin_->flush();
  const auto [text, end] = read_all();
  EXPECT_EQ(text, "");
  EXPECT_EQ(end, make_error(StreamFailure::origin_reset,
                            static_cast<std::uint32_t>(h2::ErrorCode::internal_error)));
  EXPECT_EQ(end, upstream.failure());
  EXPECT_EQ(upstream.why(), "the origin reset the HTTP/2 stream (INTERNAL_ERROR)");
  const auto report = stream_failure_report(end, "a.test:443");
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->reason, rules::Reason::upstream_closed);
  EXPECT_EQ(report->sentence, "a.test:443: the origin reset the HTTP/2 stream (INTERNAL_ERROR).");
  EXPECT_FALSE(stream_failure_report(asio::error::connection_reset, "a.test:443").has_value());
}

}  // namespace
}  // namespace sandgate::session::exchange
