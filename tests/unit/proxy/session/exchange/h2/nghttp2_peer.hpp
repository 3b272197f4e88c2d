// The other end of a codec in a test: a plain nghttp2 session, client or server, that nobody here
// wrote the protocol of. It records what it receives per stream and sends what the test asks,
// bodies included (with their own flow control: a peer that does not consume stalls its streams).
// The test moves bytes between it and a codec with relay() (h2_test_support.hpp).
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/session/exchange/h2/messages.hpp"

namespace sandgate::session::exchange::h2::testing {

class Nghttp2Peer {
 public:
  enum class Role { client, server };

  // What the peer saw of one stream.
  struct Stream {
    std::vector<FieldList> heads;  // every header block but trailers, in order (1xx first)
    std::string body;
    FieldList trailers;
    bool ended = false;                  // the far side's END_STREAM came
    std::optional<std::uint32_t> reset;  // RST_STREAM received, with its code
    bool closed = false;
    std::uint32_t close_code = 0;
    // The body this peer sends, and what follows it.
    std::string outgoing;
    bool outgoing_done = false;
    FieldList outgoing_trailers;
    bool deferred = false;
  };

  struct Goaway {
    std::int32_t last_stream_id = 0;
    std::uint32_t code = 0;
  };

  // `settings`: what the peer advertises (nghttp2's defaults when empty). `consume`: whether the
  // peer gives back its windows as it receives DATA (false: the far side stalls once they close).
  // `strict`: nghttp2's HTTP messaging checks on (the codec's output must pass them); off, the
  // peer also sends what RFC 9113 forbids, for the codec to judge.
  explicit Nghttp2Peer(Role role, std::vector<nghttp2_settings_entry> settings = {},
                       bool consume = true, bool strict = true);
  ~Nghttp2Peer();
  Nghttp2Peer(const Nghttp2Peer&) = delete;
  Nghttp2Peer& operator=(const Nghttp2Peer&) = delete;

  // Client: a request (pseudo-header fields in `block`). nullopt body: the head ends the stream.
  // `open`: the body is given later with send_body() and finish().
  std::int32_t submit_request(const FieldList& block, std::optional<std::string> body = {},
                              FieldList trailers = {}, bool open = false);
  // Server: a response.
  void submit_response(std::int32_t stream, const FieldList& block,
                       std::optional<std::string> body = {}, FieldList trailers = {});
  void submit_headers(std::int32_t stream, const FieldList& block, bool end_stream);
  void send_body(std::int32_t stream, std::string_view bytes);
  void finish(std::int32_t stream, FieldList trailers = {});
  void reset(std::int32_t stream, std::uint32_t code);
  void goaway(std::int32_t last_stream_id, std::uint32_t code);
  void ping();
  // Gives back `bytes` of a stream's window and the connection's (with consume = false).
  void consume(std::int32_t stream, std::size_t bytes);
  // Gives back `bytes` of the connection's window only: the stream's stays closed.
  void consume_connection(std::size_t bytes);

  // Bytes from the codec; returns nghttp2's result (negative: a fatal error).
  long receive(std::string_view bytes);
  // Everything the peer has to send.
  std::string take_output();
  bool wants_read() const;

  std::map<std::int32_t, Stream> streams;
  std::optional<Goaway> goaway_received;
  std::vector<std::uint32_t> rst_sent;  // codes of RST_STREAM the peer itself sent
  int ping_acks = 0;
  int settings_received = 0;
  nghttp2_session* session() { return session_.get(); }

 private:
  struct SessionDeleter {
    void operator()(nghttp2_session* session) const { nghttp2_session_del(session); }
  };
  static int on_header(nghttp2_session*, const nghttp2_frame*, const std::uint8_t*, std::size_t,
                       const std::uint8_t*, std::size_t, std::uint8_t, void*);
  static int on_begin_headers(nghttp2_session*, const nghttp2_frame*, void*);
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame*, void*);
  static int on_data(nghttp2_session*, std::uint8_t, std::int32_t, const std::uint8_t*, std::size_t,
                     void*);
  static int on_close(nghttp2_session*, std::int32_t, std::uint32_t, void*);
  static int on_frame_send(nghttp2_session*, const nghttp2_frame*, void*);
  static ssize_t read_body(nghttp2_session*, std::int32_t, std::uint8_t*, std::size_t,
                           std::uint32_t*, nghttp2_data_source*, void*);
  nghttp2_data_provider provider();

  Role role_;
  bool consume_;
  std::unique_ptr<nghttp2_session, SessionDeleter> session_;
  std::map<std::int32_t, bool> in_trailers_;
};

}  // namespace sandgate::session::exchange::h2::testing
