// The per-client watchdog (see client_slot.hpp).
#include "bench/load/client_slot.hpp"

#include <boost/asio/use_awaitable.hpp>

#include "proxy/asio/use_tuple.hpp"

namespace sandgate::load {

namespace asio = boost::asio;

client_slot::client_slot(const asio::any_io_executor& executor)
    : socket_(executor), timer_(executor, steady::time_point::max()) {}

void client_slot::arm(steady::time_point deadline) {
  deadline_ = deadline;
  // The watchdog sleeps until the old deadline; only an earlier one needs to wake it.
  if (deadline < timer_.expiry()) {
    timer_.cancel();
  }
}

bool client_slot::take_timed_out() {
  const bool was = timed_out_;
  timed_out_ = false;
  return was;
}

void client_slot::close() {
  boost::system::error_code ignored;
  socket_.close(ignored);
}

void client_slot::finish() {
  finished_ = true;
  timer_.cancel();
}

asio::awaitable<void> run_watchdog(std::shared_ptr<client_slot> slot) {
  while (!slot->finished_) {
    slot->timer_.expires_at(slot->deadline_);
    co_await slot->timer_.async_wait(use_tuple);
    if (slot->finished_) {
      break;
    }
    // Woken either by the deadline or by arm() moving it earlier: only the former closes.
    if (steady::now() >= slot->deadline_) {
      slot->timed_out_ = true;
      slot->close();
      slot->deadline_ = steady::time_point::max();
    }
  }
}

}  // namespace sandgate::load
