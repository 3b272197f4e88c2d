// What one client connection's handlers share: its sockets, identity, the worker it runs on, its
// registration for reloads and the settings its heads are read with. What a request is decided
// with is the request's own (decision_state.hpp), never the connection's.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "proxy/log/decision_log.hpp"
#include "proxy/session/decision_state.hpp"
#include "proxy/session/wire/byte_stream.hpp"
#include "proxy/session/worker_context.hpp"
#include "rules/policy.hpp"
#include "rules/reason.hpp"

namespace sandgate::session {

struct SecuredOrigin;
class H2Origin;

struct SessionContext {
  // `client_address`: how the log names the client, when the caller knows it (the address
  // accept returned, or a unix client's label); empty: asked of the socket (getpeername).
  SessionContext(WorkerContext& w, boost::asio::ip::tcp::socket socket,
                 std::string client_address = {});
  ~SessionContext();
  SessionContext(const SessionContext&) = delete;
  SessionContext& operator=(const SessionContext&) = delete;

  WorkerContext& worker;
  boost::asio::ip::tcp::socket client;
  boost::asio::ip::tcp::socket upstream;
  // What the HTTP exchange reads and writes: the sockets themselves, or the TLS streams of an
  // inspected connection on top of them (wire/byte_stream.hpp). Socket-level operations
  // (cancel, close, shutdown) stay on `client` and `upstream`.
  ByteStream client_stream{client};
  ByteStream upstream_stream{upstream};
  // A tunnel to an inspected host that took an idle verified origin connection from the
  // worker's pool instead of dialling (open_tunnel.cpp): its socket is `upstream`, its TLS
  // stream is here until the inspected front end adopts it.
  std::unique_ptr<SecuredOrigin> secured_origin;
  // Or a shared HTTP/2 connection to the origin it took instead (h2_origin_pool.hpp), for a
  // client that offers h2; `upstream` is then not connected.
  std::shared_ptr<H2Origin> shared_h2_origin;
  std::uint64_t id;
  std::string client_address;  // "127.0.0.1:50312", for the log
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  LiveConnection live;
  // Set when an established tunnel took over the sockets and the connection's count.
  bool handed_off = false;
  // The settings the connection's heads are read and admitted with; see settings().
  std::shared_ptr<const settings::Settings> settings_snapshot;

  // The request arriving now on this connection, whose head has just been read and authorised:
  // decided with the worker's current policy and the settings its head came under.
  DecisionState arriving_request() const { return DecisionState(worker, settings_snapshot); }
  // For a later request of a kept-alive connection: the worker's current settings (a reload may
  // have changed the token, head timeout, SNI check, ...). Taken before its head is waited for
  // (the head timeout) and again once the head is here, before the token is checked: without
  // that a connection kept alive across a reload would go on being admitted with the token the
  // reload replaced.
  void take_current_settings() { settings_snapshot = worker.settings; }
  // Registers where the connection now leads, for reloads to judge; first judges it with the
  // rules in force now if a reload came while the request (`decided`: what it was decided with)
  // was being set up (its waits for LaunchDarkly, DNS or the connect). Returns the revocation
  // when those rules deny it; then nothing is registered and the caller refuses the request.
  // Report-only mode keeps the denial in `decided` instead. The streams of an HTTP/2 connection
  // all lead to its one origin: each registers it again.
  std::optional<Revocation> register_destination(DecisionState& decided, Destination destination);
  // After a wait: true when the connection can go on. Otherwise the drain or a reload closed it
  // while it waited, and the line saying so has been written (shutting-down, or revoked).
  bool still_wanted(std::string_view method, std::string_view host, std::uint16_t port);
  // The end line of a connection that has no request to name (method and host "-"), counted
  // under `reason`: what record_internal_error() and record_no_request() write.
  void record_end_without_request(rules::Reason reason, std::string_view outcome,
                                  std::string_view detail);
  // True once the drain deadline has passed: a session that resumes from a wait ends instead of
  // starting anything new (its sockets have been closed).
  bool stopping() const { return worker.stopping; }

  // The settings the connection's current head was read and admitted with (token, head timeout,
  // idle timeout): a reload posts new ones to the worker, which the next head takes in
  // take_current_settings(). A request's stages read its DecisionState's instead.
  const settings::Settings& settings() const { return *settings_snapshot; }
  log::DecisionLog& log() const { return worker.shared.log; }
  double elapsed_ms() const;

  // Writes a decision line to the log and counts it in the worker's metrics (denials also go to
  // the recent-denials ring). The line's verdict and reason code are `reason`'s row in the
  // reason table, whatever `record` held; `enforced` false (report-only mode) makes a denial's
  // verdict `would-deny`. Every handler's decision goes through here.
  void record_decision(log::Record record, rules::Reason reason, bool enforced = true);

  // Writes an end line to the log and counts its bytes. Its verdict and reason are the caller's
  // (an end line repeats its request's verdict).
  void record_end(const log::Record& end);

  // The end line of a connection that an unexpected error ended (an exception from anywhere on
  // its path): outcome "error", reason internal-error, counted as such. Closes both sockets.
  void record_internal_error(std::string_view what);
  // The line of a connection whose client left, or was closed by the drain, in the middle of a
  // request head (`partial`) or before sending anything: an end line with outcome "closed" and
  // reason client-closed (a partial head), no-request, or shutting-down.
  void record_no_request(bool partial);
  // The line of a request that the drain ended before it was decided or connected: verdict
  // "error", reason shutting-down. Closes both sockets, unless `close` is false: one stream of
  // an HTTP/2 connection, whose other streams the drain ends each in its turn.
  void record_shutting_down(std::string_view method, std::string_view host, std::uint16_t port,
                            bool close = true);
  // The end line of a connection a reload closed (LiveConnection::revoked): verdict "deny",
  // outcome "revoked", the new rules' reason and rule; counted as a denial.
  // Host and port are the registered destination's.
  void record_revoked(std::string_view method, std::uint64_t bytes_up, std::uint64_t bytes_down);
};

std::string to_text(const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace sandgate::session
