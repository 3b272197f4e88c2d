// The shared rules of the timed workloads' client loops (see run_state.hpp).
#include "bench/load/run_state.hpp"

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

}  // namespace sandgate::load
