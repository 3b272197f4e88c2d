// The hold workloads (see hold.hpp).
#include "bench/load/hold.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/system_error.hpp>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/load/h2_client.hpp"
#include "bench/load/h2_client_session.hpp"
#include "bench/load/h2_wire.hpp"
#include "bench/load/http1_exchange.hpp"
#include "bench/load/process_memory.hpp"
#include "bench/load/run_state.hpp"
#include "bench/load/tls.hpp"
#include "proxy/asio/use_tuple.hpp"

namespace sandgate::load {

namespace asio = boost::asio;

namespace {

// Each phase (opening the connections, opening the streams) gets this long at most, whatever the
// counts: bounded even against a stalling proxy.
constexpr auto phase_budget = std::chrono::seconds(120);
// The origin's path for a response it begins and never ends (origin_server.hpp).
const std::string hold_path = "/hold";

// One connection kept open: its slot (socket and watchdog), TLS stream, and its HTTP/2 session
// (h2-hold) or the buffer its HTTP/1.1 responses are read into (https-hold).
struct held_connection {
  std::shared_ptr<client_slot> slot;
  std::unique_ptr<tls_stream> stream;
  std::unique_ptr<h2_client_session> session;
  std::string buffer;
};

struct hold_state {
  run_options options;
  bool h2 = true;  // h2-hold; false: https-hold
  route via;
  std::shared_ptr<asio::ssl::context> tls;
  std::string host;  // verified and sent as SNI
  std::string authority;
  steady::duration timeout{};
  steady::time_point phase_deadline;
  std::uint64_t next = 0;                          // index of the next connection to open
  unsigned busy = 0;                               // coroutines of the current phase still working
  std::unique_ptr<asio::steady_timer> phase_done;  // cancelled by the last of them
  std::vector<std::unique_ptr<held_connection>> held;
  run_result result;

  void count_error(error_kind kind, int status) {
    ++result.errors[static_cast<std::size_t>(kind)];
    if (kind == error_kind::refused) {
      ++result.refused_status[status];
    }
    result.aborted = result.aborted || result.error_total() >= options.max_errors;
  }
  void finish_one() {
    if (--busy == 0) {
      phase_done->cancel();
    }
  }
};

// How a phase went on one connection: its first error (none when all went as wanted) and, for
// refused, the status.
struct phase_outcome {
  error_kind error = error_kind::none;
  int status = 0;
};

// Moves the connection's bytes until `done()` says its streams are where the phase wants them.
// The first stream that ends badly stops it with its error; with `streams_must_stay` (held
// streams never end) so does any stream that ends. Bounded by the slot's deadline.
asio::awaitable<phase_outcome> exchange_until(held_connection& connection, std::size_t body_bytes,
                                              bool streams_must_stay, std::function<bool()> done) {
  auto& session = *connection.session;
  phase_outcome result;
  const h2_io_end end = co_await run_h2_io(*connection.stream, session.native(), [&] {
    for (const auto& ended : session.ended()) {
      const error_kind outcome = stream_outcome(ended, body_bytes);
      if (result.error == error_kind::none && (outcome != error_kind::none || streams_must_stay)) {
        result = {outcome == error_kind::none ? error_kind::io : outcome, ended.status};
      }
    }
    session.ended().clear();
    return result.error == error_kind::none && !done();
  });
  if (end == h2_io_end::stopped) {
    co_return result;
  }
  if (end == h2_io_end::protocol_error) {
    co_return phase_outcome{error_kind::bad_response};
  }
  co_return phase_outcome{failure(*connection.slot, error_kind::proxy_closed)};
}

// Opens one connection and carries one GET on it: HTTP/2 (ALPN h2) or HTTP/1.1 inside TLS.
asio::awaitable<phase_outcome> open_and_use(held_connection& connection, hold_state& state,
                                            std::string& head) {
  const std::string first_path = "/" + std::to_string(state.options.payload_bytes);
  auto& slot = *connection.slot;
  phase_outcome outcome;
  if (state.h2) {
    outcome.error = co_await open_h2_connection(slot, state.via, *state.tls, state.host,
                                                connection.stream, head, outcome.status);
    if (outcome.error != error_kind::none) {
      co_return outcome;
    }
    connection.session = std::make_unique<h2_client_session>(state.authority);
    auto& session = *connection.session;
    session.submit_get(first_path);
    co_return co_await exchange_until(connection, state.options.payload_bytes, false,
                                      [&session] { return session.open_streams() == 0; });
  }
  outcome.error = co_await open_tunnel(slot, state.via, head, outcome.status);
  if (outcome.error != error_kind::none) {
    co_return outcome;
  }
  connection.stream = std::make_unique<tls_stream>(slot.socket(), *state.tls);
  outcome.error = co_await client_tls_handshake(slot, *connection.stream, state.host);
  if (outcome.error == error_kind::none) {
    const std::string request =
        "GET " + first_path + " HTTP/1.1\r\nHost: " + state.authority + "\r\n\r\n";
    bool close_after = false;
    bool stale = false;
    outcome.error = co_await http_exchange(*connection.stream, slot, request, connection.buffer,
                                           false, outcome.status, close_after, stale);
    if (outcome.error == error_kind::none && close_after) {
      outcome.error = error_kind::proxy_closed;  // a connection that will not stay open
    }
  }
  co_return outcome;
}

// Phase one: opens connections one after another until the requested number has been tried;
// each carries one GET (a connection that has been used, as a real client's has) and is parked,
// its watchdog disarmed. Several of these run at once (--open-parallelism).
asio::awaitable<void> open_connections(std::shared_ptr<hold_state> state) {
  const auto executor = co_await asio::this_coro::executor;
  std::string head;
  while (state->next < state->result.tunnels_requested && !state->result.aborted) {
    const auto started = steady::now();
    if (started >= state->phase_deadline) {
      break;
    }
    ++state->next;
    auto connection = std::make_unique<held_connection>();
    connection->slot = std::make_shared<client_slot>(executor);
    asio::co_spawn(executor, run_watchdog(connection->slot), asio::detached);
    connection->slot->arm(std::min(started + state->timeout, state->phase_deadline));
    const phase_outcome outcome = co_await open_and_use(*connection, *state, head);
    if (outcome.error == error_kind::none) {
      connection->slot->arm(steady::time_point::max());
      state->held.push_back(std::move(connection));
      continue;
    }
    connection->slot->close();
    connection->slot->finish();
    state->count_error(outcome.error, outcome.status);
  }
  state->finish_one();
}

// HTTP/1.1's held request: GET /hold, and its response head awaited (the body never comes).
asio::awaitable<phase_outcome> hold_request(held_connection& connection, hold_state& state) {
  const std::string request =
      "GET " + hold_path + " HTTP/1.1\r\nHost: " + state.authority + "\r\n\r\n";
  auto& stream = *connection.stream;
  connection.buffer.clear();
  auto [write_error, written] =
      co_await asio::async_write(stream, asio::buffer(request), use_tuple);
  if (write_error) {
    co_return phase_outcome{failure(*connection.slot, error_kind::io)};
  }
  auto [read_error, head_size] = co_await asio::async_read_until(
      stream, asio::dynamic_buffer(connection.buffer, 16 * 1024), "\r\n\r\n", use_tuple);
  if (read_error) {
    co_return phase_outcome{failure(*connection.slot, error_kind::proxy_closed)};
  }
  const int status = parse_http_status(connection.buffer);
  if (status != 200) {
    co_return phase_outcome{status == 0 ? error_kind::bad_response : error_kind::refused, status};
  }
  co_return phase_outcome{};
}

// Phase two, on one parked connection: h2-hold opens --streams streams to /hold and awaits their
// heads (each head back through the proxy means the stream is open at both its ends); https-hold
// one request. What came back is counted; the connection is parked again.
asio::awaitable<void> hold_streams(held_connection* connection, std::shared_ptr<hold_state> state) {
  connection->slot->arm(state->phase_deadline);
  phase_outcome outcome;
  if (state->h2) {
    auto& session = *connection->session;
    const std::size_t wanted = state->options.streams;
    for (std::size_t i = 0; i < wanted; ++i) {
      session.submit_get(hold_path);
    }
    outcome = co_await exchange_until(
        *connection, 0, true, [&session, wanted] { return session.open_with_head() >= wanted; });
    state->result.streams_open += session.open_with_head();
  } else {
    outcome = co_await hold_request(*connection, *state);
    state->result.streams_open += outcome.error == error_kind::none ? 1 : 0;
  }
  if (outcome.error != error_kind::none) {
    state->count_error(outcome.error, outcome.status);
  }
  connection->slot->arm(steady::time_point::max());
  state->finish_one();
}

// A held connection is alive if the proxy has neither closed nor reset it: a non-blocking peek
// finds no EOF (0) and no error other than "nothing to read" (bytes to read are fine: a PING).
bool still_open(asio::ip::tcp::socket& socket) {
  char byte = 0;
  const auto n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

// Waits until every coroutine of the phase has called finish_one().
asio::awaitable<void> phase_end(hold_state& state) {
  if (state.busy > 0) {
    co_await state.phase_done->async_wait(use_tuple);
  }
}

asio::awaitable<void> pause_for(double s) {
  asio::steady_timer pause(co_await asio::this_coro::executor);
  pause.expires_after(seconds(s));
  co_await pause.async_wait(use_tuple);
}

asio::awaitable<void> hold_main(std::shared_ptr<hold_state> state) {
  const auto executor = co_await asio::this_coro::executor;
  const auto started = steady::now();
  const int pid = state->options.proxy_pid;
  state->phase_done = std::make_unique<asio::steady_timer>(executor, steady::time_point::max());

  // Connections, opened with bounded parallelism (each is a TLS handshake or two).
  state->phase_deadline = started + phase_budget;
  state->busy = static_cast<unsigned>(
      std::min<std::uint64_t>(state->options.open_parallelism, state->result.tunnels_requested));
  for (unsigned i = state->busy; i > 0; --i) {
    asio::co_spawn(executor, open_connections(state), asio::detached);
  }
  co_await phase_end(*state);
  state->result.tunnels_open = state->held.size();
  state->result.open_s = std::chrono::duration<double>(steady::now() - started).count();
  // Let the proxy finish its side of the last connections before pricing them (a blocking /proc
  // read is fine: nothing else runs on this loop now).
  co_await pause_for(state->options.settle_s);
  if (pid > 0) {
    state->result.memory_connections = read_process_memory(pid);
  }

  // Streams, on every parked connection at once.
  if (state->options.streams > 0 && !state->held.empty() && !state->result.aborted) {
    state->phase_deadline = steady::now() + phase_budget;
    state->phase_done->expires_at(steady::time_point::max());
    state->busy = static_cast<unsigned>(state->held.size());
    for (auto& connection : state->held) {
      asio::co_spawn(executor, hold_streams(connection.get(), state), asio::detached);
    }
    co_await phase_end(*state);
    co_await pause_for(state->options.settle_s);
    if (pid > 0) {
      state->result.memory_after = read_process_memory(pid);
    }
  }

  // Hold, then check the proxy kept every connection, then close them all.
  co_await pause_for(state->options.duration_s);
  for (auto& connection : state->held) {
    state->result.tunnels_alive += still_open(connection->slot->socket()) ? 1 : 0;
    connection->slot->close();
    connection->slot->finish();
  }
}

}  // namespace

run_result run_hold(const run_options& options) {
  asio::io_context context(1);
  auto state = std::make_shared<hold_state>();
  state->options = options;
  state->h2 = options.workload == workload_kind::h2_hold;
  state->result.tunnels_requested = options.concurrency;
  state->result.streams = options.streams;
  state->result.proxy_pid = options.proxy_pid;
  try {
    state->tls = make_client_tls_context(options.ca_file);
  } catch (const boost::system::system_error& error) {
    std::fprintf(stderr, "sandgate-load: cannot load --ca-file: %s\n", error.what());
    state->result.aborted = true;
    return state->result;
  }
  state->via = make_route(options.proxy, options.origin, options.connect_host);
  state->host =
      options.connect_host.empty() ? options.origin.address().to_string() : options.connect_host;
  state->authority = origin_authority(options.origin, options.connect_host);
  state->timeout = seconds(options.timeout_s);
  state->held.reserve(options.concurrency);

  if (options.proxy_pid > 0) {
    state->result.memory_before = read_process_memory(options.proxy_pid);
  }
  asio::co_spawn(context, hold_main(state), asio::detached);
  context.run_for(2 * phase_budget + seconds(2 * options.settle_s + options.duration_s) +
                  std::chrono::seconds(5));
  if (!context.stopped()) {
    state->result.hard_stopped = true;
    for (auto& connection : state->held) {
      connection->slot->close();
      connection->slot->finish();
    }
    context.run_for(std::chrono::seconds(1));
    context.stop();
  }
  state->result.threads = 1;
  state->result.measured_s = options.duration_s;
  return state->result;
}

}  // namespace sandgate::load
