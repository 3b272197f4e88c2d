// The client workloads (see workloads.hpp; h2 is in h2_client.cpp, the hold ones in hold.cpp).
// Each worker thread owns one io_context, one run_state and its clients; threads share nothing
// until their results are merged at the end.
#include "bench/load/workloads.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/system_error.hpp>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/load/client_slot.hpp"
#include "bench/load/h2_client.hpp"
#include "bench/load/hold.hpp"
#include "bench/load/http1_exchange.hpp"
#include "bench/load/loopback_endpoint.hpp"
#include "bench/load/origin_server.hpp"
#include "bench/load/process_memory.hpp"
#include "bench/load/run_state.hpp"
#include "bench/load/tls.hpp"
#include "bench/load/tunnel.hpp"
#include "proxy/asio/use_tuple.hpp"

namespace sandgate::load {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// Payload for the echo: the role byte, then a pattern that differs per client so a proxy mixing
// up tunnels shows up as `mismatch`.
std::vector<char> echo_payload(std::size_t size, unsigned client) {
  std::vector<char> payload(std::max<std::size_t>(size, 1));
  payload[0] = origin_echo;
  for (std::size_t i = 1; i < payload.size(); ++i) {
    payload[i] = static_cast<char>('a' + (client + i) % 26);
  }
  return payload;
}

// One echo through an open tunnel: proves the tunnel reaches the origin both ways.
asio::awaitable<error_kind> echo_round_trip(client_slot& slot, std::span<const char> sent,
                                            std::span<char> received) {
  auto& socket = slot.socket();
  auto [write_error, written] = co_await asio::async_write(socket, asio::buffer(sent), use_tuple);
  if (write_error) {
    co_return failure(slot, error_kind::io);
  }
  auto [read_error, n] = co_await asio::async_read(socket, asio::buffer(received), use_tuple);
  if (read_error) {
    co_return failure(slot, error_kind::io);
  }
  co_return std::equal(sent.begin(), sent.end(), received.begin()) ? error_kind::none
                                                                   : error_kind::mismatch;
}

// Setups: one client's loop of connect -> CONNECT -> echo -> close until the end of the run.
// Latency runs from before the connect to the echo's arrival; the close is not included.
asio::awaitable<void> setups_client(std::shared_ptr<client_slot> slot,
                                    std::shared_ptr<run_state> state, unsigned client) {
  const std::vector<char> sent = echo_payload(state->options.payload_bytes, client);
  std::vector<char> received(sent.size());
  std::string head;
  head.reserve(512);
  asio::steady_timer backoff(slot->socket().get_executor());

  while (const auto started = begin_attempt(*slot, *state)) {
    int status = 0;
    error_kind outcome = co_await open_tunnel(*slot, state->via, head, status);
    if (outcome == error_kind::none) {
      outcome = co_await echo_round_trip(*slot, sent, received);
    }
    const auto finished = steady::now();
    slot->close();

    const bool go_on =
        co_await settle_attempt(*state, backoff, *started, finished, outcome, status);
    if (!go_on) {
      break;
    }
  }
  slot->finish();
}

// Download: ask the origin's source for bytes and count what arrives inside the window.
asio::awaitable<error_kind> pump_download(client_slot& slot, run_state& state,
                                          std::vector<char>& buffer) {
  auto& socket = slot.socket();
  const char role = origin_source;
  auto [write_error, written] =
      co_await asio::async_write(socket, asio::buffer(&role, 1), use_tuple);
  if (write_error) {
    co_return failure(slot, error_kind::io);
  }
  while (true) {
    auto [error, n] = co_await socket.async_read_some(asio::buffer(buffer), use_tuple);
    const auto now = steady::now();
    if (error) {
      co_return now >= state.run_end ? error_kind::none : failure(slot, error_kind::io);
    }
    if (now >= state.warmup_end && now <= state.run_end) {
      state.result.bytes += n;
    }
    // Each read pushes the watchdog: only a stall of --timeout is an error.
    slot.arm(deadline_from(state, now));
  }
}

// Upload: pour the shared chunk into the origin's sink; bytes count when the kernel takes them.
asio::awaitable<error_kind> pump_upload(client_slot& slot, run_state& state) {
  auto& socket = slot.socket();
  const char role = origin_sink;
  auto [write_error, written] =
      co_await asio::async_write(socket, asio::buffer(&role, 1), use_tuple);
  if (write_error) {
    co_return failure(slot, error_kind::io);
  }
  const auto chunk = state.upload_chunk;
  while (true) {
    auto [error, n] = co_await socket.async_write_some(asio::buffer(*chunk), use_tuple);
    const auto now = steady::now();
    if (error) {
      co_return now >= state.run_end ? error_kind::none : failure(slot, error_kind::io);
    }
    if (now >= state.warmup_end && now <= state.run_end) {
      state.result.bytes += n;
    }
    slot.arm(deadline_from(state, now));
  }
}

// Download/upload: one tunnel, reopened after a failure (with a back-off) until the run ends.
asio::awaitable<void> stream_client(std::shared_ptr<client_slot> slot,
                                    std::shared_ptr<run_state> state) {
  const bool download = state->options.workload == workload_kind::download;
  std::vector<char> buffer(download ? state->options.chunk_bytes : 0);
  std::string head;
  asio::steady_timer backoff(slot->socket().get_executor());

  while (begin_attempt(*slot, *state)) {
    int status = 0;
    error_kind outcome = co_await open_tunnel(*slot, state->via, head, status);
    if (outcome == error_kind::none) {
      ++state->result.ops;
      outcome = download ? co_await pump_download(*slot, *state, buffer)
                         : co_await pump_upload(*slot, *state);
    }
    slot->close();
    if (outcome == error_kind::none || steady::now() >= state->run_end) {
      break;
    }
    co_await back_off(*state, backoff, outcome, status);
  }
  slot->finish();
}

// ---- http ----

// HTTP: one client's kept-alive connection (to the proxy, or straight to the origin) and its loop
// of GET -> whole response. Latency runs from the request (or from the connect, when one was
// needed) to the response's last byte.
asio::awaitable<void> http_client(std::shared_ptr<client_slot> slot,
                                  std::shared_ptr<run_state> state) {
  const route dial_only{state->via.first_hop, {}};  // open_tunnel with no CONNECT: a plain connect
  std::string head;
  std::string buffer;
  buffer.reserve(1024);
  asio::steady_timer backoff(slot->socket().get_executor());
  bool connected = false;

  while (const auto started = begin_attempt(*slot, *state)) {
    int status = 0;
    error_kind outcome = error_kind::none;
    const bool reused = connected;
    if (!connected) {
      outcome = co_await open_tunnel(*slot, dial_only, head, status);
      connected = outcome == error_kind::none;
      state->result.connections += connected ? 1 : 0;
    }
    bool close_after = false;
    bool stale = false;
    if (outcome == error_kind::none) {
      outcome = co_await http_exchange(slot->socket(), *slot, state->http_request, buffer, reused,
                                       status, close_after, stale);
    }
    const auto finished = steady::now();
    if (stale) {
      slot->close();
      connected = false;
      continue;
    }
    if (outcome != error_kind::none || close_after) {
      slot->close();
      connected = false;
    }
    const bool go_on =
        co_await settle_attempt(*state, backoff, *started, finished, outcome, status);
    if (!go_on) {
      break;
    }
  }
  slot->close();
  slot->finish();
}

// ---- https ----

// HTTPS setups: one client's loop of connect -> CONNECT -> TLS handshake -> one GET and its whole
// response -> close, until the end of the run. Every handshake is a full one (no session is
// kept). The close sends no close_notify, as many clients do not; the latency runs from before
// the connect to the response's last byte.
asio::awaitable<void> https_setups_client(std::shared_ptr<client_slot> slot,
                                          std::shared_ptr<run_state> state) {
  std::string head;
  head.reserve(512);
  std::string buffer;
  buffer.reserve(1024);
  asio::steady_timer backoff(slot->socket().get_executor());

  while (const auto started = begin_attempt(*slot, *state)) {
    int status = 0;
    error_kind outcome = co_await open_tunnel(*slot, state->via, head, status);
    if (outcome == error_kind::none) {
      tls_stream stream(slot->socket(), *state->tls);
      outcome = co_await client_tls_handshake(*slot, stream, state->tls_host);
      if (outcome == error_kind::none) {
        bool close_after = false;
        bool stale = false;
        outcome = co_await http_exchange(stream, *slot, state->https_request, buffer, false, status,
                                         close_after, stale);
      }
    }
    const auto finished = steady::now();
    slot->close();

    const bool go_on =
        co_await settle_attempt(*state, backoff, *started, finished, outcome, status);
    if (!go_on) {
      break;
    }
  }
  slot->finish();
}

// HTTPS on kept-alive connections: one client's TLS connection (through one CONNECT, or straight
// to the origin) and its loop of GET -> whole response, as the http workload but inside TLS. A
// connection the server closes is reopened (CONNECT and a new full handshake); latency includes
// that when it happens.
asio::awaitable<void> https_client(std::shared_ptr<client_slot> slot,
                                   std::shared_ptr<run_state> state) {
  std::string head;
  std::string buffer;
  buffer.reserve(1024);
  asio::steady_timer backoff(slot->socket().get_executor());
  // Made anew for every connection: an OpenSSL stream cannot be reused after its socket closed.
  std::unique_ptr<tls_stream> stream;

  while (const auto started = begin_attempt(*slot, *state)) {
    int status = 0;
    error_kind outcome = error_kind::none;
    const bool reused = stream != nullptr;
    if (!stream) {
      outcome = co_await open_tunnel(*slot, state->via, head, status);
      if (outcome == error_kind::none) {
        stream = std::make_unique<tls_stream>(slot->socket(), *state->tls);
        outcome = co_await client_tls_handshake(*slot, *stream, state->tls_host);
      }
      state->result.connections += outcome == error_kind::none ? 1 : 0;
    }
    bool close_after = false;
    bool stale = false;
    if (outcome == error_kind::none) {
      outcome = co_await http_exchange(*stream, *slot, state->https_request, buffer, reused, status,
                                       close_after, stale);
    }
    const auto finished = steady::now();
    if (stale) {
      slot->close();
      stream.reset();
      continue;
    }
    if (outcome != error_kind::none || close_after) {
      slot->close();
      stream.reset();
    }
    const bool go_on =
        co_await settle_attempt(*state, backoff, *started, finished, outcome, status);
    if (!go_on) {
      break;
    }
  }
  slot->close();
  stream.reset();
  slot->finish();
}

// One worker thread of a timed workload: its share of the clients on its own io_context.
run_result run_timed_worker(const run_options& options,
                            const std::shared_ptr<asio::ssl::context>& tls, unsigned clients,
                            unsigned first_client, steady::time_point warmup_end,
                            steady::time_point run_end, std::uint64_t max_errors) {
  asio::io_context context(1);
  auto state = std::make_shared<run_state>();
  state->options = options;
  state->via = make_route(options.proxy, options.origin, options.connect_host, options.socks5);
  state->timeout = seconds(options.timeout_s);
  state->warmup_end = warmup_end;
  state->run_end = run_end;
  state->max_errors = max_errors;
  state->upload_chunk = std::make_shared<const std::vector<char>>(options.chunk_bytes, 'u');
  state->http_request = make_http_request(options.proxy.has_value(), options.origin,
                                          options.connect_host, options.payload_bytes);
  state->tls = tls;
  state->tls_host =
      options.connect_host.empty() ? options.origin.address().to_string() : options.connect_host;
  // Inside TLS the request is in origin form, whatever the first hop: the tunnel is the proxy's
  // business, the request the origin's (an inspecting proxy requires exactly this form).
  state->https_request =
      make_http_request(false, options.origin, options.connect_host, options.payload_bytes);

  for (unsigned i = 0; i < clients; ++i) {
    auto slot = std::make_shared<client_slot>(context.get_executor());
    state->slots.push_back(slot);
    asio::co_spawn(context, run_watchdog(slot), asio::detached);
    if (options.workload == workload_kind::setups) {
      asio::co_spawn(context, setups_client(slot, state, first_client + i), asio::detached);
    } else if (options.workload == workload_kind::http) {
      asio::co_spawn(context, http_client(slot, state), asio::detached);
    } else if (options.workload == workload_kind::https_setups) {
      asio::co_spawn(context, https_setups_client(slot, state), asio::detached);
    } else if (options.workload == workload_kind::https) {
      asio::co_spawn(context, https_client(slot, state), asio::detached);
    } else if (options.workload == workload_kind::h2) {
      asio::co_spawn(context, h2_client(slot, state), asio::detached);
    } else if (options.workload == workload_kind::h2_setups) {
      asio::co_spawn(context, h2_setups_client(slot, state), asio::detached);
    } else {
      asio::co_spawn(context, stream_client(slot, state), asio::detached);
    }
  }

  // Every operation is bounded by the run's end, so the loop runs dry by then; the extra bound
  // only guards against a bug in that reasoning.
  context.run_until(run_end + state->timeout + std::chrono::seconds(5));
  if (!context.stopped()) {
    state->result.hard_stopped = true;
    for (auto& slot : state->slots) {
      slot->close();
      slot->finish();
    }
    context.run_for(std::chrono::seconds(1));
    context.stop();
  }
  return state->result;
}

run_result run_timed(const run_options& options) {
  // One client TLS context for every worker thread (OpenSSL's contexts are safe to share once
  // set up); made before the clock starts, since loading the bundle is not part of the load.
  std::shared_ptr<asio::ssl::context> tls;
  if (options.workload == workload_kind::https_setups || options.workload == workload_kind::https ||
      options.workload == workload_kind::h2 || options.workload == workload_kind::h2_setups) {
    try {
      tls = make_client_tls_context(options.ca_file);
    } catch (const boost::system::system_error& error) {
      std::fprintf(stderr, "sandgate-load: cannot load --ca-file: %s\n", error.what());
      run_result failed;
      failed.aborted = true;
      return failed;
    }
  }
  const double warmup =
      options.warmup_s >= 0 ? options.warmup_s : std::min(1.0, options.duration_s / 10);
  const auto start = steady::now();
  const auto warmup_end = start + seconds(warmup);
  const auto run_end = start + seconds(options.duration_s);
  const unsigned threads = std::clamp(options.threads, 1u, options.concurrency);

  // The proxy's CPU time over exactly the measured window, sampled by a thread of its own that
  // sleeps through the run (so the event loops never block on /proc).
  std::optional<cpu_sample> cpu_before;
  std::optional<cpu_sample> cpu_after;
  std::thread cpu_sampler;
  if (options.proxy_pid > 0) {
    cpu_sampler = std::thread([&cpu_before, &cpu_after, &options, warmup_end, run_end] {
      std::this_thread::sleep_until(warmup_end);
      cpu_before = read_process_cpu(options.proxy_pid);
      std::this_thread::sleep_until(run_end);
      cpu_after = read_process_cpu(options.proxy_pid);
    });
  }

  // Clients split as evenly as possible; thread 0 is the calling thread.
  std::vector<run_result> parts(threads);
  std::vector<std::thread> helpers;
  unsigned first_client = 0;
  for (unsigned t = 0; t < threads; ++t) {
    const unsigned clients = options.concurrency / threads + (t < options.concurrency % threads);
    const std::uint64_t max_errors = std::max<std::uint64_t>(1, options.max_errors / threads);
    if (t == 0) {
      first_client += clients;
      continue;
    }
    helpers.emplace_back([&parts, &options, &tls, t, clients, first_client, warmup_end, run_end,
                          max_errors] {
      parts[t] =
          run_timed_worker(options, tls, clients, first_client, warmup_end, run_end, max_errors);
    });
    first_client += clients;
  }
  const unsigned own = options.concurrency / threads + (0 < options.concurrency % threads);
  parts[0] = run_timed_worker(options, tls, own, 0, warmup_end, run_end,
                              std::max<std::uint64_t>(1, options.max_errors / threads));
  for (auto& helper : helpers) {
    helper.join();
  }
  if (cpu_sampler.joinable()) {
    cpu_sampler.join();
  }

  run_result result = std::move(parts[0]);
  for (unsigned t = 1; t < threads; ++t) {
    result.merge(parts[t]);
  }
  result.threads = threads;
  result.measured_s = std::chrono::duration<double>(run_end - warmup_end).count();
  result.cpu_before = cpu_before;
  result.cpu_after = cpu_after;
  return result;
}

// ---- idle ----

struct idle_state {
  run_options options;
  route via;
  steady::duration timeout{};
  steady::time_point open_deadline;
  std::uint64_t next = 0;  // index of the next tunnel to open
  unsigned openers_left = 0;
  std::vector<tcp::socket> held;
  std::vector<std::shared_ptr<client_slot>> slots;
  std::unique_ptr<asio::steady_timer> all_open;  // cancelled by the last opener to finish
  run_result result;
};

// Opens tunnels one after another until the requested number has been attempted; each is echoed
// once (a tunnel that has carried data, as a real client's has) and then parked in `held`.
asio::awaitable<void> idle_opener(std::shared_ptr<client_slot> slot,
                                  std::shared_ptr<idle_state> state, unsigned opener) {
  const std::vector<char> sent = echo_payload(state->options.payload_bytes, opener);
  std::vector<char> received(sent.size());
  std::string head;
  while (state->next < state->result.tunnels_requested && !state->result.aborted) {
    const auto started = steady::now();
    if (started >= state->open_deadline) {
      break;
    }
    ++state->next;
    slot->arm(std::min(started + state->timeout, state->open_deadline));
    slot->take_timed_out();
    int status = 0;
    error_kind outcome = co_await open_tunnel(*slot, state->via, head, status);
    if (outcome == error_kind::none) {
      outcome = co_await echo_round_trip(*slot, sent, received);
    }
    if (outcome == error_kind::none) {
      // Disarm before handing the socket over, so the watchdog can never close a held tunnel.
      slot->arm(steady::time_point::max());
      state->held.push_back(std::move(slot->socket()));
      continue;
    }
    slot->close();
    ++state->result.errors[static_cast<std::size_t>(outcome)];
    if (outcome == error_kind::refused) {
      ++state->result.refused_status[status];
    }
    state->result.aborted = state->result.error_total() >= state->options.max_errors;
  }
  slot->finish();
  if (--state->openers_left == 0) {
    state->all_open->cancel();
  }
}

// A held tunnel is alive if the proxy has neither closed nor reset it: a non-blocking peek finds
// no EOF (0) and no error other than "nothing to read".
bool still_open(tcp::socket& socket) {
  char byte = 0;
  const auto n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

asio::awaitable<void> idle_main(std::shared_ptr<idle_state> state) {
  const auto executor = co_await asio::this_coro::executor;
  const auto started = steady::now();

  // Open with bounded parallelism: 10,000 SYNs at once would overflow listen queues and turn
  // into one-second SYN retransmits, measuring the kernel rather than the proxy.
  const auto openers = static_cast<unsigned>(
      std::min<std::uint64_t>(state->options.open_parallelism, state->result.tunnels_requested));
  state->openers_left = openers;
  state->all_open = std::make_unique<asio::steady_timer>(executor, steady::time_point::max());
  for (unsigned i = 0; i < openers; ++i) {
    auto slot = std::make_shared<client_slot>(executor);
    state->slots.push_back(slot);
    asio::co_spawn(executor, run_watchdog(slot), asio::detached);
    asio::co_spawn(executor, idle_opener(slot, state, i), asio::detached);
  }
  if (openers > 0) {
    co_await state->all_open->async_wait(use_tuple);
  }
  state->result.tunnels_open = state->held.size();
  state->result.open_s = std::chrono::duration<double>(steady::now() - started).count();

  // Let the proxy finish its side of the last tunnels before pricing them, then sample (a
  // blocking /proc read is fine: nothing else runs on this loop now).
  asio::steady_timer pause(executor);
  pause.expires_after(seconds(state->options.settle_s));
  co_await pause.async_wait(use_tuple);
  if (state->options.proxy_pid > 0) {
    state->result.memory_after = read_process_memory(state->options.proxy_pid);
  }

  // Hold, then check the proxy kept every tunnel, then close them all.
  pause.expires_after(seconds(state->options.duration_s));
  co_await pause.async_wait(use_tuple);
  for (auto& socket : state->held) {
    state->result.tunnels_alive += still_open(socket) ? 1 : 0;
    boost::system::error_code ignored;
    socket.close(ignored);
  }
}

run_result run_idle(const run_options& options) {
  asio::io_context context(1);
  auto state = std::make_shared<idle_state>();
  state->options = options;
  state->via = make_route(options.proxy, options.origin, options.connect_host, options.socks5);
  state->timeout = seconds(options.timeout_s);
  state->result.tunnels_requested = options.concurrency;
  state->result.proxy_pid = options.proxy_pid;
  state->held.reserve(options.concurrency);
  // Opening gets two minutes at most, whatever the count: bounded even against a stalling proxy.
  const auto open_budget = std::chrono::seconds(120);
  state->open_deadline = steady::now() + open_budget;

  if (options.proxy_pid > 0) {
    state->result.memory_before = read_process_memory(options.proxy_pid);
  }
  asio::co_spawn(context, idle_main(state), asio::detached);
  context.run_for(open_budget + seconds(options.settle_s + options.duration_s) +
                  std::chrono::seconds(5));
  if (!context.stopped()) {
    state->result.hard_stopped = true;
    context.stop();
  }
  state->result.threads = 1;
  state->result.measured_s = options.duration_s;
  return state->result;
}

}  // namespace

const char* workload_name(workload_kind kind) {
  switch (kind) {
    case workload_kind::setups:
      return "setups";
    case workload_kind::download:
      return "download";
    case workload_kind::upload:
      return "upload";
    case workload_kind::idle:
      return "idle";
    case workload_kind::http:
      return "http";
    case workload_kind::https_setups:
      return "https-setups";
    case workload_kind::https:
      return "https";
    case workload_kind::h2:
      return "h2";
    case workload_kind::h2_setups:
      return "h2-setups";
    case workload_kind::h2_hold:
      return "h2-hold";
    case workload_kind::https_hold:
      return "https-hold";
  }
  return "unknown";
}

run_result run_workload(const run_options& options) {
  run_result result =
      options.workload == workload_kind::idle ? run_idle(options)
      : options.workload == workload_kind::h2_hold || options.workload == workload_kind::https_hold
          ? run_hold(options)
          : run_timed(options);
  result.label = options.label;
  result.workload = workload_name(options.workload);
  result.proxy = options.proxy ? endpoint_text(*options.proxy) : "none";
  result.origin = endpoint_text(options.origin);
  result.connect_host = options.connect_host;
  result.concurrency = options.concurrency;
  result.streams = options.workload == workload_kind::h2 ? options.streams : result.streams;
  result.duration_s = options.duration_s;
  return result;
}

}  // namespace sandgate::load
