// The h2 workload's client loop (see h2_client.hpp).
#include "bench/load/h2_client.hpp"

#include <boost/asio/steady_timer.hpp>
#include <optional>
#include <string>
#include <utility>

#include "bench/load/h2_client_session.hpp"
#include "bench/load/h2_wire.hpp"

namespace sandgate::load {

namespace asio = boost::asio;

namespace {

// The connection's streams until it or the run ends: --streams GETs submitted at once, and each
// that ends counted and replaced while the run lasts. none when the run ended, or the server
// ended the connection by GOAWAY (the client reconnects, as a real one would).
asio::awaitable<error_kind> keep_streams_busy(client_slot& slot, tls_stream& stream,
                                              run_state& state) {
  h2_client_session session(origin_authority(state.options.origin, state.options.connect_host));
  if (!session.valid()) {
    co_return error_kind::io;
  }
  const std::size_t body_bytes = state.options.payload_bytes;
  const std::string path = "/" + std::to_string(body_bytes);
  for (unsigned i = 0; i < state.options.streams; ++i) {
    session.submit_get(path);
  }
  const h2_io_end end = co_await run_h2_io(stream, session.native(), [&] {
    const auto now = steady::now();
    // Each read pushes the watchdog: only a stall of --timeout is an error.
    slot.arm(deadline_from(state, now));
    for (const auto& ended : session.ended()) {
      const error_kind outcome = stream_outcome(ended, body_bytes);
      if (outcome == error_kind::none) {
        state.count_completion(ended.started, now);
      } else if (now < state.run_end) {
        state.count_error(outcome, ended.status);
      }
      if (now < state.run_end && !session.goaway_received()) {
        session.submit_get(path);
      }
    }
    session.ended().clear();
    return true;
  });
  if (end == h2_io_end::protocol_error) {
    co_return error_kind::bad_response;
  }
  if (steady::now() >= state.run_end || end == h2_io_end::finished || session.goaway_received()) {
    co_return error_kind::none;
  }
  co_return failure(slot, error_kind::proxy_closed);
}

// One GET stream on a fresh connection, until its response ended.
asio::awaitable<error_kind> one_stream(client_slot& slot, tls_stream& stream, run_state& state) {
  h2_client_session session(origin_authority(state.options.origin, state.options.connect_host));
  if (!session.valid()) {
    co_return error_kind::io;
  }
  const std::size_t body_bytes = state.options.payload_bytes;
  session.submit_get("/" + std::to_string(body_bytes));
  std::optional<error_kind> outcome;
  const h2_io_end end = co_await run_h2_io(stream, session.native(), [&] {
    for (const auto& ended : session.ended()) {
      outcome = stream_outcome(ended, body_bytes);
    }
    session.ended().clear();
    return !outcome.has_value();
  });
  if (end == h2_io_end::protocol_error) {
    co_return error_kind::bad_response;
  }
  co_return outcome ? *outcome : failure(slot, error_kind::proxy_closed);
}

// What an h2 client does with each connection it opened.
using connection_work = asio::awaitable<error_kind> (*)(client_slot&, tls_stream&, run_state&);

// Whether a connection whose work went well is an operation of its own (h2-setups: from before
// its connect to its stream's end), or only its streams are (h2: counted as they end).
enum class connection_count { count_streams_only, count_each_connection };
using enum connection_count;

// An h2 client's loop: one connection at a time (CONNECT, TLS with ALPN h2) and `work` on it,
// until the run ends; a failed attempt counted and backed off.
asio::awaitable<void> h2_connections(std::shared_ptr<client_slot> slot,
                                     std::shared_ptr<run_state> state, connection_work work,
                                     connection_count counted) {
  std::string head;
  asio::steady_timer backoff(slot->socket().get_executor());
  // Made anew for every connection: an OpenSSL stream cannot be reused after its socket closed.
  std::unique_ptr<tls_stream> stream;

  while (const auto started = begin_attempt(*slot, *state)) {
    int status = 0;
    error_kind outcome = co_await open_h2_connection(*slot, state->via, *state->tls,
                                                     state->tls_host, stream, head, status);
    if (outcome == error_kind::none) {
      ++state->result.connections;
      outcome = co_await work(*slot, *stream, *state);
    }
    const auto finished = steady::now();
    slot->close();
    stream.reset();
    const bool go_on = co_await settle_attempt(*state, backoff, *started, finished, outcome, status,
                                               counted == count_each_connection);
    if (!go_on) {
      break;
    }
  }
  slot->finish();
}

}  // namespace

asio::awaitable<error_kind> open_h2_connection(client_slot& slot, const route& via,
                                               asio::ssl::context& tls, const std::string& host,
                                               std::unique_ptr<tls_stream>& stream,
                                               std::string& head, int& status) {
  stream.reset();
  error_kind outcome = co_await open_tunnel(slot, via, head, status);
  if (outcome != error_kind::none) {
    co_return outcome;
  }
  stream = std::make_unique<tls_stream>(slot.socket(), tls);
  outcome = co_await client_tls_handshake(slot, *stream, host, alpn_h2_or_http11);
  if (outcome == error_kind::none && chosen_protocol(stream->native_handle()) != "h2") {
    outcome = error_kind::alpn;
  }
  co_return outcome;
}

asio::awaitable<void> h2_client(std::shared_ptr<client_slot> slot,
                                std::shared_ptr<run_state> state) {
  co_await h2_connections(std::move(slot), std::move(state), keep_streams_busy, count_streams_only);
}

asio::awaitable<void> h2_setups_client(std::shared_ptr<client_slot> slot,
                                       std::shared_ptr<run_state> state) {
  co_await h2_connections(std::move(slot), std::move(state), one_stream, count_each_connection);
}

}  // namespace sandgate::load
