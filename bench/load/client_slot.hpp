// One concurrent client of the load tool: its socket and the single watchdog that bounds every
// operation on it in time (Asio's timeout example: one timer per session that each operation
// pushes, rather than a timer per read).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>

namespace sandgate::load {

using steady = std::chrono::steady_clock;

// Owned by a shared_ptr shared between the client coroutine and run_watchdog(). All members are
// used on the slot's executor only (one thread): no locking.
class client_slot {
 public:
  explicit client_slot(const boost::asio::any_io_executor& executor);

  boost::asio::ip::tcp::socket& socket() { return socket_; }

  // Sets the time by which the current operation must finish; past it the watchdog closes the
  // socket, which completes the pending operation with operation_aborted. Moving the deadline
  // later costs nothing; moving it earlier wakes the watchdog to re-arm.
  void arm(steady::time_point deadline);

  // True once if the watchdog closed the socket since the last call: tells a timeout from an error.
  bool take_timed_out();

  // Closes the socket now (end of run, abort); errors are of no interest at that point.
  void close();

  // Ends the watchdog; call when the client coroutine returns so the io_context can run dry.
  void finish();

  // Waits for the slot's deadlines until finish(); spawn once per slot on the slot's executor.
  friend boost::asio::awaitable<void> run_watchdog(std::shared_ptr<client_slot> slot);

 private:
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer timer_;
  steady::time_point deadline_ = steady::time_point::max();
  bool timed_out_ = false;
  bool finished_ = false;
};

boost::asio::awaitable<void> run_watchdog(std::shared_ptr<client_slot> slot);

}  // namespace sandgate::load
