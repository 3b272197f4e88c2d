// An established CONNECT tunnel, handed over from the coroutine that set it up: it owns both
// sockets and a TunnelRelay, and when the relay ends it logs the end line, counts the bytes and
// uncounts the connection, then deletes itself. The set-up coroutines finish at hand-over, so an
// idle tunnel costs this object and two pending waits rather than a stack of coroutine frames.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <string>

#include "proxy/relay/tunnel_relay.hpp"
#include "proxy/server/worker.hpp"
#include "proxy/session/session_context.hpp"

namespace sandgate::session {

class TunnelSession {
 public:
  // Takes the sockets and the connection's place in the worker's counts from `context` (which
  // must not touch them afterwards) and starts relaying. Worker thread only.
  static void start(SessionContext& context, std::string host, std::uint16_t port,
                    std::uint64_t early_bytes);

 private:
  TunnelSession(SessionContext& context, std::string host, std::uint16_t port,
                std::uint64_t early_bytes);
  ~TunnelSession();
  void on_done(relay::Result result);

  server::Worker& worker_;
  boost::asio::ip::tcp::socket client_;
  boost::asio::ip::tcp::socket upstream_;
  server::LiveConnection live_;
  std::uint64_t id_;
  std::string client_address_;
  std::string host_;
  std::uint16_t port_;
  std::uint64_t early_bytes_;
  std::chrono::steady_clock::time_point started_;
  relay::TunnelRelay relay_;
};

}  // namespace sandgate::session
