// What one client connection's handlers share: its socket, identity, the worker it runs on and
// the policy snapshot taken when it arrived.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "proxy/log/decision_log.hpp"
#include "proxy/server/worker.hpp"
#include "rules/policy.hpp"

namespace sandgate::session {

struct SessionContext {
  SessionContext(server::Worker& w, boost::asio::ip::tcp::socket socket);
  ~SessionContext();
  SessionContext(const SessionContext&) = delete;
  SessionContext& operator=(const SessionContext&) = delete;

  server::Worker& worker;
  boost::asio::ip::tcp::socket client;
  boost::asio::ip::tcp::socket upstream;
  std::uint64_t id;
  std::string client_address;  // "127.0.0.1:50312", for the log
  std::shared_ptr<const rules::Policy> policy;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  server::LiveConnection live;
  // Set when an established tunnel took over the sockets and the connection's count.
  bool handed_off = false;

  const settings::Settings& settings() const { return worker.shared.settings; }
  log::DecisionLog& log() const { return worker.shared.log; }
  double elapsed_ms() const;

  // Writes a decision or end line to the log and counts it in the worker's metrics (denials
  // also go to the recent-denials ring). Every handler records through here.
  void record(const log::Record& record);
};

std::string to_text(const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace sandgate::session
