// A codec and its real peer (nghttp2 on the other end) joined in memory, byte for byte: relay()
// moves what each writes to the other until both are quiet, and keeps the codec's events.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "proxy/session/exchange/h2/client_codec.hpp"
#include "proxy/session/exchange/h2/server_codec.hpp"
#include "tests/unit/proxy/session/exchange/h2/nghttp2_peer.hpp"
#include "tests/unit/proxy/session/exchange/h2/raw_frames.hpp"

namespace sandgate::session::exchange::h2::testing {

// A clock the test moves by hand.
struct ManualClock {
  std::chrono::steady_clock::time_point now{};
  Clock clock() {
    return [this] { return now; };
  }
};

// The events of one type, in order.
template <typename Event, typename Variant>
std::vector<Event> only(const std::vector<Variant>& events) {
  std::vector<Event> out;
  for (const Variant& event : events) {
    if (const auto* wanted = std::get_if<Event>(&event)) {
      out.push_back(*wanted);
    }
  }
  return out;
}

// The stream an event is about (0 for the connection's).
template <typename Variant>
StreamId stream_of(const Variant& event) {
  return std::visit(
      [](const auto& e) -> StreamId {
        if constexpr (requires { e.stream; }) {
          return e.stream;
        } else {
          return 0;
        }
      },
      event);
}

// A codec and a peer joined in memory.
template <typename Codec, typename Event>
struct Pair {
  template <typename Options>
  Pair(Options options, Nghttp2Peer::Role role, std::vector<nghttp2_settings_entry> settings,
       bool peer_consumes, bool strict)
      : codec(std::move(options)), peer(role, std::move(settings), peer_consumes, strict) {}

  // Moves bytes both ways until neither side writes; keeps the events. With auto_consume, each
  // DataEvent counts as forwarded at once.
  void relay(int rounds = 10000) {
    for (int round = 0; round < rounds; ++round) {
      bool moved = false;
      const std::string_view out = codec.pending_output();
      if (!out.empty()) {
        moved = true;
        const std::string copy(out);
        codec.consume_output(copy.size());
        peer_result = peer.receive(copy);
      }
      take_events();
      const std::string in = peer.take_output();
      if (!in.empty()) {
        moved = true;
        last_error = codec.receive(in);
      }
      take_events();
      if (!moved) {
        return;
      }
    }
    ADD_FAILURE() << "relay() did not settle";
  }

  void take_events() {
    while (auto event = codec.next_event()) {
      if (const auto* data = std::get_if<DataEvent>(&*event); data && auto_consume) {
        codec.consume(data->stream, data->bytes.size());
      }
      events.push_back(std::move(*event));
    }
  }

  template <typename Wanted>
  std::vector<Wanted> all() const {
    return only<Wanted>(events);
  }

  // The body the codec passed on for `stream`, all pieces together.
  std::string body(StreamId stream) const {
    std::string out;
    for (const auto& data : all<DataEvent>()) {
      if (data.stream == stream) {
        out += data.bytes;
      }
    }
    return out;
  }

  const StreamClosedEvent* closed(StreamId stream) const {
    for (const Event& event : events) {
      if (const auto* closed = std::get_if<StreamClosedEvent>(&event);
          closed && closed->stream == stream) {
        return closed;
      }
    }
    return nullptr;
  }

  Codec codec;
  Nghttp2Peer peer;
  std::vector<Event> events;
  bool auto_consume = true;
  long peer_result = 0;
  ConnectionError last_error = ConnectionError::none;
};

// ServerCodec with a real nghttp2 client.
struct ServerPair : Pair<ServerCodec, ServerEvent> {
  explicit ServerPair(ServerOptions options = {}, std::vector<nghttp2_settings_entry> settings = {},
                      bool client_consumes = true, bool strict = true)
      : Pair(std::move(options), Nghttp2Peer::Role::client, std::move(settings), client_consumes,
             strict) {}
  Nghttp2Peer& client() { return peer; }
};

// ClientCodec with a real nghttp2 server.
struct ClientPair : Pair<ClientCodec, ClientEvent> {
  explicit ClientPair(ClientOptions options = {}, std::vector<nghttp2_settings_entry> settings = {},
                      bool server_consumes = true, bool strict = true)
      : Pair(std::move(options), Nghttp2Peer::Role::server, std::move(settings), server_consumes,
             strict) {}
  Nghttp2Peer& server() { return peer; }
};

// A ServerCodec fed raw frames: the preface and a SETTINGS first, then whatever the test writes;
// frames() reads what the codec answered (HEADERS blocks decoded with decode()).
struct RawClient {
  explicit RawClient(ServerOptions options = {}) : codec(std::move(options)) {
    send(std::string(kPreface) + settings({}));
  }
  ConnectionError send(std::string_view bytes) {
    last_error = codec.receive(bytes);
    while (auto event = codec.next_event()) {
      events.push_back(std::move(*event));
    }
    return last_error;
  }
  // What the codec wrote since the last call, as frames.
  std::vector<Frame> frames() {
    std::string out;
    for (std::string_view chunk = codec.pending_output(); !chunk.empty();
         chunk = codec.pending_output()) {
      out.append(chunk);
      codec.consume_output(chunk.size());
      while (auto event = codec.next_event()) {
        events.push_back(std::move(*event));
      }
    }
    return read_frames(out);
  }
  // The first frame of `type` (on `stream`, unless 0 for any) among `frames`, if any.
  static std::optional<Frame> find(const std::vector<Frame>& frames, std::uint8_t type,
                                   std::uint32_t stream = 0) {
    for (const Frame& frame : frames) {
      if (frame.type == type && (stream == 0 || frame.stream == stream)) {
        return frame;
      }
    }
    return std::nullopt;
  }
  std::string request(std::uint32_t stream, const FieldList& block, bool end_stream = true) {
    return headers_frame(stream, encoder.encode(block), end_stream);
  }

  ServerCodec codec;
  HpackEncoder encoder;
  std::vector<ServerEvent> events;
  ConnectionError last_error = ConnectionError::none;
};

}  // namespace sandgate::session::exchange::h2::testing
