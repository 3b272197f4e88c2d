// Fuzz target: the gate's HTTP/2 server codec (proxy/session/exchange/h2/server_codec.hpp) on
// arbitrary client bytes after the connection preface, with an owner that answers each request
// one of five ways (a body, gRPC trailers, a reset, an interim head then 204, nothing), consumes
// every body piece, and writes the output in pieces.
//
// The input's first byte picks the piece size the bytes are fed in (1 byte to 16 KiB, at most 512
// pieces), whether extended CONNECT is on from the start or turned on halfway through (a later
// SETTINGS, as the gate does once its origin allows it), and whether the output is written whole
// or half at a time; the rest is what the client sends after "PRI * HTTP/2.0...". The clock moves 1
// ms a piece.
//
// Invariants, beyond "no out-of-bounds access and no undefined behaviour" (ASan, UBSan):
//   - every event names a stream the owner heard of (a head or a refusal) and that is not
//     closed: one head or refusal per stream, at most one end, trailers only before the end,
//     exactly one StreamClosedEvent, nothing after it;
//   - a request head passed on is what the checks allow: its :path an origin-form path (or "*"
//     for OPTIONS), its authority host[:port], its scheme the connection's, :protocol only with
//     CONNECT and only when enabled, no host field, every field name lowercase and a token,
//     every value free of control characters, no connection-specific field, te only "trailers";
//   - trailers carry no pseudo-header, framing or credential field;
//   - the output the codec holds stays within its batch and one frame;
//   - a connection error, once set, stays the same, and after it no new stream is heard of.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "proxy/session/exchange/h2/message_checks.hpp"
#include "proxy/session/exchange/h2/server_codec.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using namespace sandgate::session::exchange::h2;

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
// A frame's header and the largest payload the gate lets nghttp2 make, and a GOAWAY made by hand.
constexpr std::size_t kOutputSlack = 9 + 16384 + 17;

struct StreamSeen {
  bool closed = false;
  bool ended = false;
  bool trailers = false;
};

void check_fields(const FieldList& fields, const char* what) {
  for (const Field& field : fields) {
    FUZZ_CHECK(is_field_name(field.name),
               std::string(what) + " name: " + sandgate::fuzz::escaped(field.name));
    FUZZ_CHECK(is_field_value(field.value),
               std::string(what) + " value: " + sandgate::fuzz::escaped(field.value));
    FUZZ_CHECK(!is_connection_specific(field.name),
               std::string(what) + " connection-specific: " + field.name);
    FUZZ_CHECK(field.name != "te" || field.value.size() == 8,
               std::string(what) + " te: " + sandgate::fuzz::escaped(field.value));
  }
}

void check_head(const RequestHead& head, bool connect_protocol) {
  FUZZ_CHECK(is_token(head.method), "method: " + sandgate::fuzz::escaped(head.method));
  FUZZ_CHECK(head.scheme == "https", "scheme: " + sandgate::fuzz::escaped(head.scheme));
  FUZZ_CHECK(is_authority(head.authority), "authority: " + sandgate::fuzz::escaped(head.authority));
  FUZZ_CHECK(is_request_path(head.path, head.method),
             "path: " + sandgate::fuzz::escaped(head.path));
  FUZZ_CHECK(head.protocol.empty() || (connect_protocol && head.method == "CONNECT"),
             "protocol: " + sandgate::fuzz::escaped(head.protocol));
  FUZZ_CHECK(head.method != "CONNECT" || !head.protocol.empty(), "a plain CONNECT passed");
  FUZZ_CHECK(find_field(head.fields, "host") == nullptr, "host kept in the fields");
  check_fields(head.fields, "request field");
}

class Owner {
 public:
  Owner(ServerCodec& codec, bool connect_protocol)
      : codec_(codec), connect_protocol_(connect_protocol) {}

  void drain() {
    while (auto event = codec_.next_event()) {
      std::visit([this](auto& e) { take(e); }, *event);
    }
  }
  // The connection's error is known and its events are all taken: no new stream may come.
  void connection_ended() { ended_ = true; }
  // Extended CONNECT was turned on: heads with :protocol may come from now on.
  void connect_protocol_enabled() { connect_protocol_ = true; }

 private:
  StreamSeen& known(StreamId stream, const char* what) {
    const auto found = streams_.find(stream);
    FUZZ_CHECK(found != streams_.end(),
               std::string(what) + " for a stream never heard of: " + std::to_string(stream));
    FUZZ_CHECK(!found->second.closed,
               std::string(what) + " after the stream closed: " + std::to_string(stream));
    return found->second;
  }
  void open(StreamId stream) {
    FUZZ_CHECK(streams_.count(stream) == 0, "a stream heard of twice: " + std::to_string(stream));
    FUZZ_CHECK(!ended_, "a stream heard of after the connection's error: " +
                            std::string(describe(codec_.error())));
    streams_[stream];
  }

  void take(RequestHeadEvent& e) {
    open(e.stream);
    check_head(e.head, connect_protocol_);
    const ResponseHead ok{200, {{"content-type", "text/plain"}}, {}};
    switch ((e.stream / 2) % 5) {
      case 0:
        if (codec_.submit_response(e.stream, ok, false) == SubmitError::none) {
          codec_.send_data(e.stream, "answer");
          codec_.end_stream(e.stream);
        }
        break;
      case 1:
        if (codec_.submit_response(e.stream, ok, false) == SubmitError::none) {
          codec_.send_data(e.stream, std::string(20000, 'g'));
          codec_.submit_trailers(e.stream, {{"grpc-status", "0"}});
        }
        break;
      case 2:
        codec_.reset_stream(e.stream, ErrorCode::cancel);
        break;
      case 3:
        codec_.submit_interim(e.stream, ResponseHead{100, {}, {}});
        codec_.submit_response(e.stream, ResponseHead{204, {}, {}}, true);
        break;
      default:
        break;  // left open: the client's resets, the GOAWAY or the end take it
    }
  }
  void take(RequestRejectedEvent& e) {
    open(e.stream);
    if (e.must_answer) {
      codec_.submit_response(e.stream, ResponseHead{431, {}, {}}, true);
    }
  }
  void take(DataEvent& e) {
    StreamSeen& seen = known(e.stream, "data");
    FUZZ_CHECK(!seen.ended && !seen.trailers, "data after the end: " + std::to_string(e.stream));
    codec_.consume(e.stream, e.bytes.size());
  }
  void take(TrailersEvent& e) {
    StreamSeen& seen = known(e.stream, "trailers");
    FUZZ_CHECK(!seen.ended && !seen.trailers, "trailers twice: " + std::to_string(e.stream));
    seen.trailers = true;
    FUZZ_CHECK(check_trailers(e.fields) == StreamProblem::none, "trailers passed unchecked");
  }
  void take(EndEvent& e) {
    StreamSeen& seen = known(e.stream, "end");
    FUZZ_CHECK(!seen.ended, "end twice: " + std::to_string(e.stream));
    seen.ended = true;
  }
  void take(SendReadyEvent& e) { known(e.stream, "send ready"); }
  void take(StreamClosedEvent& e) { known(e.stream, "close").closed = true; }
  void take(GoawayEvent&) {}

  ServerCodec& codec_;
  bool connect_protocol_;
  bool ended_ = false;
  std::map<StreamId, StreamSeen> streams_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) {
    return 0;
  }
  const std::size_t piece = std::size_t{1} << (data[0] % 15);
  const bool connect_protocol = (data[0] & 0x40) != 0;
  const bool connect_protocol_later = !connect_protocol && (data[0] & 0x20) != 0;
  const bool half_writes = (data[0] & 0x80) != 0;
  std::string input(kPreface);
  input.append(reinterpret_cast<const char*>(data) + 1, size - 1);
  // At most 512 pieces: small pieces of a long input would spend the run on one input.
  const std::size_t step = std::max(piece, input.size() / 512 + 1);

  std::chrono::steady_clock::time_point now{};
  ServerOptions options;
  options.enable_connect_protocol = connect_protocol;
  options.clock = [&now] { return now; };
  ServerCodec codec(options);
  Owner owner(codec, connect_protocol);
  ConnectionError first_error = ConnectionError::none;

  const auto write = [&] {
    for (int i = 0; i < 64; ++i) {
      const std::string_view out = codec.pending_output();
      FUZZ_CHECK(out.size() <= options.limits.output_batch + kOutputSlack,
                 "output held: " + std::to_string(out.size()));
      if (out.empty()) {
        break;
      }
      codec.consume_output(half_writes ? (out.size() + 1) / 2 : out.size());
      owner.drain();
    }
  };
  for (std::size_t at = 0; at < input.size(); at += step) {
    now += std::chrono::milliseconds(1);
    if (connect_protocol_later && at >= input.size() / 2 && !codec.connect_protocol_enabled()) {
      owner.drain();  // the heads before are judged without it
      codec.enable_connect_protocol();
      FUZZ_CHECK(codec.connect_protocol_enabled() || codec.error() != ConnectionError::none,
                 "extended CONNECT not turned on");
      if (codec.connect_protocol_enabled()) {
        owner.connect_protocol_enabled();
      }
    }
    const ConnectionError error = codec.receive(std::string_view(input).substr(at, step));
    if (first_error != ConnectionError::none) {
      FUZZ_CHECK(error == first_error,
                 "a connection error changed: " + std::string(describe(first_error)) + " then " +
                     std::string(describe(error)));
    }
    first_error = codec.error();
    owner.drain();
    write();
    if (codec.error() != ConnectionError::none) {
      owner.connection_ended();
    }
  }
  codec.shutdown();
  owner.drain();
  write();
  return 0;
}
