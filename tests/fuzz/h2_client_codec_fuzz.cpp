// Fuzz target: the gate's HTTP/2 client codec (proxy/session/exchange/h2/client_codec.hpp) on
// arbitrary bytes from an origin, after the codec sent its preface and three requests (stream 1:
// GET; 3: POST with a body and trailers; 5: HEAD). The owner consumes every body piece, sends
// more requests while the connection takes them, pings now and then, and writes the output in
// pieces.
//
// The input's first byte picks the piece size the bytes are fed in (1 byte to 16 KiB, at most 512
// pieces) and whether the output is written whole or half at a time; the rest is the origin's
// bytes.
//
// Invariants, beyond "no out-of-bounds access and no undefined behaviour" (ASan, UBSan):
//   - every event names a stream the owner opened and that is not closed: interim heads only
//     before the final head, one final head, data and trailers only after it, at most one end,
//     exactly one StreamClosedEvent, nothing after it;
//   - a response head passed on has a status of 100-199 but 101 (interim) or 200-599 (final),
//     every field name lowercase and a token, every value free of control characters, no
//     connection-specific or pseudo-header field; trailers carry no framing or credential field;
//   - a request is refused exactly when available_streams() says none is available (or it is
//     going away), and never more streams are open than the gate's limit;
//   - the output the codec holds stays within its batch and one frame.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "proxy/session/exchange/h2/client_codec.hpp"
#include "proxy/session/exchange/h2/message_checks.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using namespace sandgate::session::exchange::h2;

constexpr std::size_t kOutputSlack = 9 + 16384 + 17;

struct StreamSeen {
  bool final_head = false;
  bool ended = false;
  bool trailers = false;
  bool closed = false;
};

void check_fields(const FieldList& fields, const char* what) {
  for (const Field& field : fields) {
    FUZZ_CHECK(is_field_name(field.name),
               std::string(what) + " name: " + sandgate::fuzz::escaped(field.name));
    FUZZ_CHECK(is_field_value(field.value),
               std::string(what) + " value: " + sandgate::fuzz::escaped(field.value));
    FUZZ_CHECK(!is_connection_specific(field.name),
               std::string(what) + " connection-specific: " + field.name);
  }
}

class Owner {
 public:
  explicit Owner(ClientCodec& codec) : codec_(codec) {}

  void request(const RequestHead& head, bool end_stream) {
    const std::size_t available = codec_.available_streams();
    const auto id = codec_.submit_request(head, end_stream);
    if (!id) {
      FUZZ_CHECK(available == 0 || id.error() != SubmitError::stream_limit_reached,
                 "refused with streams available: " + std::to_string(available));
      return;
    }
    FUZZ_CHECK(available > 0, "a request taken with no stream available");
    FUZZ_CHECK(codec_.open_streams() <= kMaxConcurrentStreams,
               "open streams: " + std::to_string(codec_.open_streams()));
    FUZZ_CHECK(streams_.count(*id) == 0, "a stream id given twice: " + std::to_string(*id));
    streams_[*id];
    if (!end_stream) {
      codec_.send_data(*id, "request body");
      codec_.submit_trailers(*id, {{"x-trailer", "1"}});
    }
  }

  void drain() {
    while (auto event = codec_.next_event()) {
      std::visit([this](auto& e) { take(e); }, *event);
    }
  }

 private:
  StreamSeen& known(StreamId stream, const char* what) {
    const auto found = streams_.find(stream);
    FUZZ_CHECK(found != streams_.end(),
               std::string(what) + " for a stream never opened: " + std::to_string(stream));
    FUZZ_CHECK(!found->second.closed,
               std::string(what) + " after the stream closed: " + std::to_string(stream));
    return found->second;
  }

  void take(InterimHeadEvent& e) {
    StreamSeen& seen = known(e.stream, "interim head");
    FUZZ_CHECK(!seen.final_head, "an interim head after the final one");
    FUZZ_CHECK(e.head.status >= 100 && e.head.status < 200 && e.head.status != 101,
               "interim status: " + std::to_string(e.head.status));
    check_fields(e.head.fields, "interim field");
  }
  void take(ResponseHeadEvent& e) {
    StreamSeen& seen = known(e.stream, "response head");
    FUZZ_CHECK(!seen.final_head, "two final heads: " + std::to_string(e.stream));
    seen.final_head = true;
    FUZZ_CHECK(e.head.status >= 200 && e.head.status <= 599,
               "final status: " + std::to_string(e.head.status));
    check_fields(e.head.fields, "response field");
  }
  void take(DataEvent& e) {
    StreamSeen& seen = known(e.stream, "data");
    FUZZ_CHECK(seen.final_head && !seen.ended && !seen.trailers,
               "data out of place: " + std::to_string(e.stream));
    codec_.consume(e.stream, e.bytes.size());
  }
  void take(TrailersEvent& e) {
    StreamSeen& seen = known(e.stream, "trailers");
    FUZZ_CHECK(seen.final_head && !seen.ended && !seen.trailers,
               "trailers out of place: " + std::to_string(e.stream));
    seen.trailers = true;
    FUZZ_CHECK(check_trailers(e.fields) == StreamProblem::none, "trailers passed unchecked");
  }
  void take(EndEvent& e) {
    StreamSeen& seen = known(e.stream, "end");
    FUZZ_CHECK(seen.final_head && !seen.ended, "end out of place: " + std::to_string(e.stream));
    seen.ended = true;
  }
  void take(SendReadyEvent& e) { known(e.stream, "send ready"); }
  void take(StreamClosedEvent& e) { known(e.stream, "close").closed = true; }
  void take(GoawayEvent&) {}
  void take(PeerSettingsEvent&) {}
  void take(PingAckEvent&) {}

  ClientCodec& codec_;
  std::map<StreamId, StreamSeen> streams_;
};

RequestHead head(std::string method, std::string path) {
  return RequestHead{std::move(method), "https", "origin.test", std::move(path), {}, {}, {}};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) {
    return 0;
  }
  const std::size_t piece = std::size_t{1} << (data[0] % 15);
  const bool half_writes = (data[0] & 0x80) != 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  // At most 512 pieces: small pieces of a long input would spend the run on one input.
  const std::size_t step = std::max(piece, input.size() / 512 + 1);

  ClientCodec codec;
  Owner owner(codec);
  owner.request(head("GET", "/"), true);
  owner.request(head("POST", "/helloworld.Greeter/SayHello"), false);
  owner.request(head("HEAD", "/"), true);

  const auto write = [&] {
    for (int i = 0; i < 64; ++i) {
      const std::string_view out = codec.pending_output();
      FUZZ_CHECK(out.size() <= kOutputBatch + kOutputSlack,
                 "output held: " + std::to_string(out.size()));
      if (out.empty()) {
        break;
      }
      codec.consume_output(half_writes ? (out.size() + 1) / 2 : out.size());
      owner.drain();
    }
  };
  write();
  int round = 0;
  for (std::size_t at = 0; at < input.size(); at += step, ++round) {
    codec.receive(input.substr(at, step));
    owner.drain();
    if (round % 4 == 3) {
      owner.request(head("GET", "/more/" + std::to_string(round)), true);
    }
    if (round % 16 == 15) {
      codec.ping();
    }
    write();
  }
  codec.shutdown();
  owner.drain();
  write();
  return 0;
}
