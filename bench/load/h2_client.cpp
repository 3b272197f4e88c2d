// The h2 workload's client loop (see h2_client.hpp).
#include "bench/load/h2_client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>

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
  std::string head;
  asio::steady_timer backoff(slot->socket().get_executor());
  // Made anew for every connection: an OpenSSL stream cannot be reused after its socket closed.
  std::unique_ptr<tls_stream> stream;

  while (true) {
    const auto started = steady::now();
    if (started >= state->run_end) {
      break;
    }
    slot->arm(deadline_from(*state, started));
    slot->take_timed_out();

    int status = 0;
    error_kind outcome = co_await open_h2_connection(*slot, state->via, *state->tls,
                                                     state->tls_host, stream, head, status);
    if (outcome == error_kind::none) {
      ++state->result.connections;
      outcome = co_await keep_streams_busy(*slot, *stream, *state);
    }
    slot->close();
    stream.reset();
    if (outcome == error_kind::none || steady::now() >= state->run_end) {
      continue;
    }
    state->count_error(outcome, status);
    backoff.expires_after(error_backoff);
    co_await backoff.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  slot->finish();
}

asio::awaitable<void> h2_setups_client(std::shared_ptr<client_slot> slot,
                                       std::shared_ptr<run_state> state) {
  std::string head;
  asio::steady_timer backoff(slot->socket().get_executor());
  std::unique_ptr<tls_stream> stream;

  while (true) {
    const auto started = steady::now();
    if (started >= state->run_end) {
      break;
    }
    slot->arm(deadline_from(*state, started));
    slot->take_timed_out();

    int status = 0;
    error_kind outcome = co_await open_h2_connection(*slot, state->via, *state->tls,
                                                     state->tls_host, stream, head, status);
    if (outcome == error_kind::none) {
      ++state->result.connections;
      outcome = co_await one_stream(*slot, *stream, *state);
    }
    const auto finished = steady::now();
    slot->close();
    stream.reset();
    if (outcome == error_kind::none) {
      state->count_completion(started, finished);
      continue;
    }
    if (finished >= state->run_end) {
      break;
    }
    state->count_error(outcome, status);
    backoff.expires_after(error_backoff);
    co_await backoff.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  slot->finish();
}

}  // namespace sandgate::load
