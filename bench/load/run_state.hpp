// What one worker thread of a timed workload shares among its clients (workloads.cpp and the
// HTTP/2 client, h2_client.cpp): the options, the window, the result being counted and the
// clients' slots; and the small rules every client loop follows (deadlines, errors, latency).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/load/client_slot.hpp"
#include "bench/load/report.hpp"
#include "bench/load/tunnel.hpp"
#include "bench/load/workloads.hpp"

namespace sandgate::load {

// The pause a client takes after an error before it tries again.
inline constexpr auto error_backoff = std::chrono::milliseconds(10);

steady::duration seconds(double s);

// Everything one worker thread's clients share; touched from that thread only.
struct run_state {
  run_options options;
  route via;
  steady::duration timeout{};
  steady::time_point warmup_end;
  steady::time_point run_end;
  std::uint64_t max_errors = 0;
  run_result result;
  std::vector<std::shared_ptr<client_slot>> slots;
  std::shared_ptr<const std::vector<char>> upload_chunk;
  std::string http_request;  // http: the GET every client repeats
  // TLS workloads: the clients' TLS context (shared by every worker thread), the name (or
  // address) verified and sent as SNI, and the origin-form GET sent inside TLS.
  std::shared_ptr<boost::asio::ssl::context> tls;
  std::string tls_host;
  std::string https_request;

  // Counts an error; past --max-errors, ends the run now so a dead target costs seconds, not
  // the whole duration (each client also backs off 10 ms per error).
  void count_error(error_kind kind, int status);

  // Counts one completed operation that began at `started`, if it finished inside the window
  // (counted by completion time, so the rate over the window is unbiased at both edges).
  void count_completion(steady::time_point started, steady::time_point finished);
};

// The deadline for an operation starting now: its own timeout, never past the end of the run.
steady::time_point deadline_from(const run_state& state, steady::time_point now);

// Distinguishes a deadline (the watchdog closed the socket) from any other failure.
error_kind failure(client_slot& slot, error_kind otherwise);

// The start of a client's next attempt (a connection, a request): now, with the slot's watchdog
// armed for it and an earlier attempt's timeout forgotten; nullopt once the run is over. Every
// client loop begins each turn with it.
std::optional<steady::time_point> begin_attempt(client_slot& slot, const run_state& state);

// After a failed attempt: counts the error (run_state::count_error) and waits error_backoff on
// `timer` before the next one.
boost::asio::awaitable<void> back_off(run_state& state, boost::asio::steady_timer& timer,
                                      error_kind outcome, int status);

// The end of an attempt that began at `started` and ended at `finished` with `outcome`: a
// success counted (when `count_success`; a client that counts its own operations passes false),
// a failure backed off. False when the loop is to stop: a failure once the run is over is its
// end cutting the attempt short, not the target's failure.
boost::asio::awaitable<bool> settle_attempt(run_state& state, boost::asio::steady_timer& timer,
                                            steady::time_point started, steady::time_point finished,
                                            error_kind outcome, int status,
                                            bool count_success = true);

}  // namespace sandgate::load
