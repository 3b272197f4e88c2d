// An established byte stream, handed over from the coroutine that set it up: a CONNECT tunnel,
// or a WebSocket connection after its 101. It owns both sockets and a TunnelRelay, and when the
// relay ends it logs the end line, counts the bytes and uncounts the connection, then deletes
// itself. The set-up coroutines finish at hand-over, so an idle tunnel costs this object and two
// pending waits rather than a stack of coroutine frames.
//
// The connection stays registered with its worker, destination included, so that a reload can
// judge it again (and close it, outcome `revoked`) and the drain can close it.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "proxy/budget/destination_budgets.hpp"
#include "proxy/log/record.hpp"
#include "proxy/relay/tunnel_relay.hpp"
#include "proxy/session/session_context.hpp"
#include "rules/ssh_identification.hpp"

namespace sandgate::session {

// Its relay asks it, before every read, how many bytes the destination's egress budgets let
// through (rules/budgets.hpp): the budgets of the rules in force at that read.
class TunnelSession : private relay::ByteAllowance {
 public:
  // A CONNECT tunnel. Takes the sockets and the connection's place in the worker's counts from
  // `context` (which must not touch them afterwards) and starts relaying. `early_bytes`: client
  // bytes already passed upstream. `ssh_watch`: the client's stream could still turn out to be
  // SSH (rules/ssh_identification.hpp, in the state the early bytes left it), so the relay looks
  // at what the client sends next and holds an SSH client to the SSH rules (of the policy in
  // force when its identification arrives); nothing: it is not watched. `method` names the front
  // end in the end line ("SOCKS5" for a SOCKS5 tunnel). `early_down`: destination bytes already
  // passed to the client (what a parent proxy sent behind its reply head). Counted in the tunnel
  // metrics. Worker thread only.
  static void start(SessionContext& context, std::string host, Destination destination,
                    std::uint64_t early_bytes,
                    std::optional<rules::SshIdentificationWatch> ssh_watch,
                    std::string method = "CONNECT", std::uint64_t early_down = 0);

  // A WebSocket connection after the 101 and whatever arrived behind either head were passed
  // on (`bytes_up`, `bytes_down`: what the exchange moved so far, heads included). Takes the
  // sockets like start(); its first bytes are not watched. Its end line is a plain request's:
  // `method`, verdict allow, duration from `request_started`. Worker thread only.
  static void start_websocket(SessionContext& context, std::string method, std::string host,
                              Destination destination, std::uint64_t bytes_up,
                              std::uint64_t bytes_down,
                              std::chrono::steady_clock::time_point request_started);

 private:
  enum class Kind : std::uint8_t { connect, websocket };
  TunnelSession(SessionContext& context, Kind kind, std::string method, std::string host,
                Destination destination, std::uint64_t early_up, std::uint64_t early_down,
                std::chrono::steady_clock::time_point started);
  ~TunnelSession() override;
  // The relay's ByteAllowance.
  std::size_t reserve(bool upward, std::size_t wanted) override;
  void settle(bool upward, std::size_t reserved, std::size_t moved) override;
  // --unknown=ask: a person is asked for the spent budget's amount once more while the direction
  // waits (the gate's question board, as a request's question).
  bool hold(bool upward, std::function<void(bool go_on)> resume) override;
  // The destination's budgets under the rules in force now (made again after a reload).
  budget::DestinationBudgets& budgets();
  // Starts the relay, counting against the budgets what the set-up already passed on.
  void start_relay();
  relay::FirstBytesLook judge_first_bytes(std::string_view bytes, bool end);
  void on_done(relay::Result result);
  void log_end(std::string_view outcome, const relay::Result& result);
  // A log line naming this connection (its id, client, method, host and port); the caller adds
  // the rest. Its views point into this session.
  log::Record record() const;

  WorkerContext& worker_;
  Kind kind_;
  boost::asio::ip::tcp::socket client_;
  boost::asio::ip::tcp::socket upstream_;
  LiveConnection live_;
  rules::SshIdentificationWatch ssh_watch_;
  std::uint64_t id_;
  std::string client_address_;
  std::string method_;
  std::string host_;
  std::uint16_t port_;
  std::uint64_t early_up_;
  std::uint64_t early_down_;
  // The connection's start (a revoked line's duration) and what the end line's duration counts
  // from: the same for a CONNECT, the upgrade request's arrival for a WebSocket.
  std::chrono::steady_clock::time_point connection_started_;
  std::chrono::steady_clock::time_point started_;
  // The SSH rules refused the client's first bytes: why, the rule and the sentence.
  struct Refusal {
    rules::Reason reason;
    std::string rule;
    std::string detail;
  };
  std::unique_ptr<const Refusal> refused_;  // rare: behind a pointer, like a revocation
  budget::DestinationBudgets budgets_;
  // Why the budgets cut the tunnel (or, in report-only mode, would have, which is logged once).
  std::unique_ptr<const budget::Stop> stop_;
  bool stop_reported_ = false;
  // While a person is asked for more: the wait's timer (the board's answer cancels it).
  std::unique_ptr<boost::asio::steady_timer> asking_;
  relay::TunnelRelay relay_;
};

}  // namespace sandgate::session
