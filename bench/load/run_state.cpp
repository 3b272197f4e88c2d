// The shared rules of the timed workloads' client loops (see run_state.hpp).
#include "bench/load/run_state.hpp"

#include "proxy/asio/use_tuple.hpp"

namespace sandgate::load {

steady::duration seconds(double s) {
  return std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(s));
}

void run_state::count_error(error_kind kind, int status) {
  ++result.errors[static_cast<std::size_t>(kind)];
  if (kind == error_kind::refused) {
    ++result.refused_status[status];
  }
  if (result.error_total() >= max_errors && !result.aborted) {
    result.aborted = true;
    run_end = steady::now();
    for (auto& slot : slots) {
      slot->close();
    }
  }
}

void run_state::count_completion(steady::time_point started, steady::time_point finished) {
  if (finished >= warmup_end && finished <= run_end) {
    result.latency_ns.record(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(finished - started).count()));
    ++result.ops;
  }
}

steady::time_point deadline_from(const run_state& state, steady::time_point now) {
  return std::min(now + state.timeout, state.run_end);
}

error_kind failure(client_slot& slot, error_kind otherwise) {
  return slot.take_timed_out() ? error_kind::timeout : otherwise;
}

std::optional<steady::time_point> begin_attempt(client_slot& slot, const run_state& state) {
  const auto started = steady::now();
  if (started >= state.run_end) {
    return std::nullopt;
  }
  slot.arm(deadline_from(state, started));
  slot.take_timed_out();
  return started;
}

boost::asio::awaitable<void> back_off(run_state& state, boost::asio::steady_timer& timer,
                                      error_kind outcome, int status) {
  state.count_error(outcome, status);
  timer.expires_after(error_backoff);
  co_await timer.async_wait(use_tuple);
}

boost::asio::awaitable<bool> settle_attempt(run_state& state, boost::asio::steady_timer& timer,
                                            steady::time_point started, steady::time_point finished,
                                            error_kind outcome, int status, bool count_success) {
  if (outcome == error_kind::none) {
    if (count_success) {
      state.count_completion(started, finished);
    }
    co_return true;
  }
  if (finished >= state.run_end) {
    co_return false;
  }
  co_await back_off(state, timer, outcome, status);
  co_return true;
}

}  // namespace sandgate::load
