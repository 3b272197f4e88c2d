// An established CONNECT tunnel, handed over from the coroutine that set it up: it owns both
// sockets and a TunnelRelay, and when the relay ends it logs the end line, counts the bytes and
// uncounts the connection, then deletes itself. The set-up coroutines finish at hand-over, so an
// idle tunnel costs this object and two pending waits rather than a stack of coroutine frames.
//
// The tunnel stays registered with its worker, destination included, so that a reload can judge
// it again (and close it, outcome `revoked`) and the drain can close it.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "proxy/relay/tunnel_relay.hpp"
#include "proxy/session/session_context.hpp"

namespace sandgate::session {

class TunnelSession {
 public:
  // Takes the sockets and the connection's place in the worker's counts from `context` (which
  // must not touch them afterwards) and starts relaying. `watch_for_ssh`: no byte of the client
  // has been seen yet, so the relay looks at its first bytes and holds an SSH client to the SSH
  // rules (of the policy in force when they arrive). Worker thread only.
  static void start(SessionContext& context, std::string host, Destination destination,
                    std::uint64_t early_bytes, bool watch_for_ssh);

 private:
  TunnelSession(SessionContext& context, std::string host, Destination destination,
                std::uint64_t early_bytes);
  ~TunnelSession();
  relay::FirstBytesVerdict judge_first_bytes(std::string_view bytes, bool final);
  void on_done(relay::Result result);
  void log_end(std::string_view outcome, const relay::Result& result);

  WorkerContext& worker_;
  boost::asio::ip::tcp::socket client_;
  boost::asio::ip::tcp::socket upstream_;
  LiveConnection live_;
  std::uint64_t id_;
  std::string client_address_;
  std::string host_;
  std::uint16_t port_;
  std::uint64_t early_bytes_;
  std::chrono::steady_clock::time_point started_;
  // The SSH rules refused the client's first bytes: why, the rule and the sentence.
  struct Refusal {
    rules::Reason reason;
    std::string rule;
    std::string detail;
  };
  std::optional<Refusal> refused_;
  relay::TunnelRelay relay_;
};

}  // namespace sandgate::session
