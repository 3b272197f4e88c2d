// What a session needs from the worker it runs on, defined on the session's side so that sessions
// depend on nothing above them: the server's Worker is a WorkerContext plus its io_context and
// listener. Everything here is per worker thread (no lock on the per-connection path) except
// SharedState, which every worker shares.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/dns/resolver.hpp"
#include "proxy/log/decision_log.hpp"
#include "proxy/metrics/metrics.hpp"
#include "proxy/relay/idle_sweep.hpp"
#include "proxy/relay/pipe_pool.hpp"
#include "proxy/settings/settings.hpp"
#include "rules/host.hpp"
#include "rules/ip_address.hpp"
#include "rules/policy.hpp"

namespace sandgate::launchdarkly {
class RemoteAllowlist;
}
namespace sandgate::ask {
class QuestionBoard;
}
namespace sandgate::inspect {
class Inspection;
}
namespace sandgate::secrets {
class MaskedSecrets;
}
namespace sandgate::budget {
class Ledger;
}
namespace sandgate::mcp {
class CallTally;
}

namespace sandgate::session {

class OriginPool;
class H2OriginPool;

// What all workers share: the log, the LaunchDarkly client, two counters.
struct SharedState {
  log::DecisionLog& log;
  // Set before the workers start when LAUNCHDARKLY_CLIENT_ID is given; outlives them.
  launchdarkly::RemoteAllowlist* remote_allowlist = nullptr;
  // The gate's question board (--unknown=ask); set before the workers start, outlives them.
  // Null: nobody can be asked, the ask default applies.
  ask::QuestionBoard* questions = nullptr;
  // Inspection's TLS contexts and CA (proxy/inspect/); set before the workers start, outlives
  // them. Null: no connection is inspected.
  inspect::Inspection* inspection = nullptr;
  // The masked credentials (proxy/secrets/); set before the workers start, outlives them. Null
  // or empty: none.
  const secrets::MaskedSecrets* secrets = nullptr;
  // What was spent of the egress budgets (proxy/budget/); set before the workers start, outlives
  // them. Null: nothing is counted (tests that make a worker of their own).
  budget::Ledger* budgets = nullptr;
  // The MCP calls judged, per tool and verdict (/metrics; proxy/mcp/call_tally.hpp); set before
  // the workers start, outlives them. Null: not counted (tests that make a worker of their own).
  mcp::CallTally* mcp_calls = nullptr;
  std::atomic<std::uint32_t> open_connections{0};
  std::atomic<std::uint64_t> next_connection_id{1};
};

// Where a connection leads, once it leads somewhere: what a reload re-judges.
struct Destination {
  rules::Host host;
  std::uint16_t port = 0;
  // The address dialled (a name's checked answer), held to the address rules again on reload.
  std::optional<rules::IpAddress> address;
  bool ssh = false;  // the client spoke SSH: the SSH rules apply too
  // For an IP destination, the name its TLS ClientHello asked for, which passed the policy too.
  // Shared, not held: rare, and every open connection carries this struct.
  std::shared_ptr<const rules::Host> tls_name;
  // Allowed by a person's answer to a question (--unknown=ask), not by a rule: a reload that
  // still finds no rule for it keeps it.
  bool answered = false;
  bool tls_name_answered = false;  // as `answered`, for tls_name
  // An uninspected tunnel: the gate does not read what it carries, so a reload that gives its
  // host request rules (splice_bar) closes it rather than let requests pass unjudged.
  bool spliced = false;
};

// Why a tunnel may not be spliced (relayed without the gate reading it): its requests must be
// judged by the request rules, and a spliced tunnel's would not be.
enum class SpliceBar : std::uint8_t {
  none,           // nothing bars it
  request_rules,  // the host it is served as has request rules: inspected, or refused
  // It was opened to an address and names no host (no TLS server name) while request rules
  // are in force: the gate cannot tell which host's rules its requests would meet, and
  // inspecting it as the address would judge them by none. Refused.
  nameless_address,
};

// What bars a tunnel to `requested`:port from being spliced under `policy`'s request rules;
// `tls_name`: the name its ClientHello gave an address (null when none, or not known yet).
// The one judgement of both the tunnel's set-up (open_tunnel.cpp) and a reload (judge_again).
// Pure.
SpliceBar splice_bar(const rules::Policy& policy, const rules::Host& requested,
                     const rules::Host* tls_name, std::uint16_t port);

// The sentence of a refusal (reason not-inspectable) for `bar` (not none).
std::string splice_bar_sentence(SpliceBar bar, const rules::Host& requested,
                                const rules::Host* tls_name, std::uint16_t port);

// Why a reload closed a connection, for its end line. Strings, not a rules::Decision: the policy
// the decision points into may be gone by the time the connection logs its end.
struct Revocation {
  std::string reason;  // the new rules' reason code
  std::string rule;    // "file:line entry", when a list entry decided
  std::string detail;  // the sentence
};

// A connection the worker can reach from outside its coroutine: to close it at the drain
// deadline, and to re-judge it when the policy changes. Registered for the lifetime of a session;
// the list is touched only on the worker's own thread.
class ByteStream;

struct LiveConnection {
  boost::asio::ip::tcp::socket* client = nullptr;
  boost::asio::ip::tcp::socket* upstream = nullptr;
  // What an inspected connection's exchanges read their origin through (session_context.hpp):
  // a stream of an HTTP/2 origin connection read there (exchange/h1_over_h2_upstream.hpp) sits
  // on no socket of this connection, so closing `upstream` does not end its read; cancelling
  // this does. Null for a tunnel.
  ByteStream* upstream_stream = nullptr;
  std::optional<Destination> destination;  // set while an upstream connection is open
  // Set when a reload closed the connection. Behind a pointer: rare, and an idle tunnel pays for
  // every byte of this struct (bench/results/2026-11-27/README.md, "idle tunnel's memory").
  std::unique_ptr<Revocation> revoked;
  // For report-only mode's line about a connection a reload would have closed: the
  // connection's id and client ("127.0.0.1:50312"; the owner's string, which outlives the
  // registration), and whether that line was written (once per connection).
  std::uint64_t connection_id = 0;
  std::string_view client_address;
  bool would_revoke_logged = false;
  LiveConnection* prev = nullptr;
  LiveConnection* next = nullptr;
};

// Holds an open connection's destination to `policy` again (the name's rules, the SSH rules when
// it speaks SSH, the dialled address's rules, and for a spliced tunnel the request rules, which
// may now need it inspected); nothing when it is still allowed. Pure.
std::optional<Revocation> judge_again(const rules::Policy& policy, const Destination& destination);

// The per-thread state sessions use. Every member is touched only on the worker's thread, after
// construction.
class WorkerContext {
 public:
  WorkerContext(SharedState& shared, std::shared_ptr<const settings::Settings> settings,
                std::shared_ptr<const rules::Policy> policy);
  ~WorkerContext();
  WorkerContext(const WorkerContext&) = delete;
  WorkerContext& operator=(const WorkerContext&) = delete;

  SharedState& shared;
  // The settings and the policy snapshot this worker serves with. Replaced (on this thread) by
  // an update a reload posts. Every request takes the snapshots current when it arrives and
  // serves all of its steps with them, so a request never sees two and none is served with an
  // old one.
  std::shared_ptr<const settings::Settings> settings;
  std::shared_ptr<const rules::Policy> policy;
  std::unique_ptr<dns::Resolver> resolver;
  relay::PipePool pipes;
  relay::IdleSweep idle_sweep;  // the idle timeouts of this worker's tunnels, one timer for all
  // Idle verified TLS connections to inspected origins (origin_pool.hpp). Emptied by every
  // policy or settings update and by the drain.
  std::unique_ptr<OriginPool> origins;
  // HTTP/2 connections to inspected origins, shared by this worker's clients of each host:port
  // (h2_origin_pool.hpp). Retired by every policy or settings update, closed by the drain.
  std::unique_ptr<H2OriginPool> h2_origins;
  metrics::WorkerMetrics metrics;

  // Set (on this thread) when the drain deadline has passed: every wait a session resumes from
  // must then end the session rather than start anything new.
  bool stopping = false;

  // Refusals of connections over the connection limit still being answered (refuse_busy, which
  // peeks and closes gracefully, for up to a few seconds each). Bounded by kMaxBusyRefusals, so
  // that a flood past the limit cannot hold descriptors the served connections need.
  std::size_t busy_refusals = 0;

  // The timers of this worker's requests waiting on a question (ask_wait.cpp). A new policy
  // (apply_policy) wakes them: each sees whether the new rules now decide what it asked, and if
  // so stops waiting, to be decided by them.
  std::vector<boost::asio::steady_timer*> asking;

  // Closes the idle origin connections and retires the shared HTTP/2 ones (a reload: none
  // verified under the old rules and settings is kept or handed out after it). Worker thread.
  void forget_idle_origins();
  // The drain: closes them all, shared HTTP/2 ones included, and keeps none from now on. Worker
  // thread.
  void close_idle_origins();

  void attach(LiveConnection& connection);
  void detach(LiveConnection& connection);
  // Closes every live connection's sockets (drain deadline). Worker thread only.
  void close_all();
  // Makes `next` the policy of this worker and wakes the requests waiting on a question (see
  // `asking`); when `revoke`, closes every live connection whose
  // destination `next` denies, marking it revoked. Returns how many were closed. Worker thread.
  // In report-only mode (this worker's settings say enforce=false) a reportable revocation
  // closes nothing: it is logged once per connection as would-deny and counted.
  std::size_t apply_policy(std::shared_ptr<const rules::Policy> next, bool revoke);

 private:
  void report_would_revoke(LiveConnection& connection, const Revocation& revocation,
                           rules::Reason reason);

  LiveConnection* live_ = nullptr;
};

// Keeps a denial (its line as written) for the admin endpoint's /denials.
void remember_denial(metrics::WorkerMetrics& metrics, const log::Record& record);

// Logs a denial that came after the connection was allowed (a revoked connection's end line, an
// SSH client refused in an established tunnel) and counts it as a denial, in the worker's
// counters and /denials. The line's verdict and reason code are `reason`'s row. For sessions and
// established tunnels, on the worker's thread.
void record_late_denial(WorkerContext& worker, log::Record line, rules::Reason reason,
                        bool enforced = true);

// The reason of a reload's revocation, which carries it as its code (Revocation must
// outlive the policy it came from). Every such code came from the table; internal_error if one
// did not.
rules::Reason revocation_reason(const Revocation& revocation);

}  // namespace sandgate::session
