// Every reason the gate gives for what it did with a connection, in one table: the policy's
// reasons (rules/policy.hpp) and the proxy's own (the request, reaching the destination, the
// origin's response, the gate itself). Each row says, once, what every reader of a reason needs:
// the stable code (logs, Proxy-Status details, /metrics labels, `sandgate check`, tests), the
// HTTP status and RFC 9209 Proxy-Status error type of the gate's reply, the verdict a decision
// with this reason carries, and a line for people.
//
// A new reason is one enumerator and one row here, and a mention in the reason lists of docs/
// (tests/unit/rules/reason_test.cpp fails until both agree). Nothing here allocates; every
// function is constexpr or pure and thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sandgate::rules {

// What a decision said. `error`: nothing the policy objected to, but the gate could not carry
// the request (DNS, connect, limits, the client left, the gate itself).
enum class Verdict : std::uint8_t { allow, deny, error };

// "allow", "deny", "error": the log's `verdict` field and the /metrics `verdict` label.
std::string_view verdict_name(Verdict verdict);

// Why a connection was allowed, denied or failed. The order is the table's (kReasons below).
enum class Reason : std::uint8_t {
  // ---- The policy (rules::Policy, the TLS and SSH checks of a tunnel, LaunchDarkly) ----
  allowed,                   // no rule objected
  invalid_host,              // the destination is no valid host or port
  loopback,                  // the destination is this machine (any spelling, *.localhost)
  local_address,             // the destination is one of this machine's own non-loopback addresses
  ip_address,                // a raw IP literal, and IP literals are not allowed
  metadata_address,          // a cloud metadata service or link-local address
  private_address,           // RFC 1918 / CGNAT / unique-local, and private networks are blocked
  reserved_address,          // multicast, broadcast, documentation and other unroutable ranges
  blocklist,                 // matched an entry of the blocklist
  port_not_allowed,          // the port is not in SANDGATE_ALLOWED_PORTS
  ssh_disabled,              // an SSH port (or an SSH client), and SSH is disabled
  ssh_non_git_host,          // an SSH port (or an SSH client), and the host is not a git host
  not_allowlisted,           // allowlist mode (local or LaunchDarkly list), and no entry matched
  launchdarkly,              // the LaunchDarkly allowlist said no
  launchdarkly_unreachable,  // LaunchDarkly gave no usable answer and failover is `deny`
  sni_mismatch,              // the TLS ClientHello names another server than the CONNECT host
  sni_missing,               // the TLS ClientHello names no server, while the CONNECT names one
  protocol_mismatch,         // not TLS on a TLS port (or a broken ClientHello)
  // ---- Destinations no rule decides (SANDGATE_UNKNOWN; proxy/ask/) ----
  unknown_destination,  // no rule decides, and unknown destinations are denied (--unknown=deny)
  ask_denied,           // a person answered `deny` or `never` to the question about it
  ask_timeout,          // nobody answered within --ask-timeout; the ask-default is deny
  ask_unavailable,      // nobody can be asked (no asker, too many questions); ask-default deny
  host_mismatch,        // capture: a plain-HTTP request whose Host is not the name dialled
  dns_refused,          // capture: a DNS query of a type or a name shape the gate refuses
  // ---- Requests inside a connection (rules/request_rules.hpp; plain HTTP and inspected TLS) ----
  request_denied,       // a deny line of the request rules matches the request
  request_not_allowed,  // the host has request rules and none of them allows the request
  origin_certificate,   // inspection: the origin's TLS certificate could not be verified
  client_tls_failed,    // inspection: the client gave up the TLS handshake with the gate
  not_inspectable,      // the host has request rules, and this tunnel cannot be inspected
  secret_refused,       // a masked secret's sentinel where the gate does not fill it in
  budget_exhausted,     // a budget of the destination's is spent (rules/budgets.hpp)
  // ---- The request (the proxy's own checks of what the client sent) ----
  auth_required,              // the gate requires a token and the request carried none
  auth_failed,                // the request's token is wrong or its Proxy-Authorization malformed
  bad_request,                // not valid HTTP/1.1, a smuggling shape, a malformed body
  origin_form,                // a bare path (`GET /x`) sent to the proxy
  https_absolute_form,        // `GET https://...`, which must be tunnelled with CONNECT
  unsupported_scheme,         // a target that is no http:// URL (`ftp://`, `*`, `host:port`)
  request_timeout,            // the request head (or a plain-HTTP body) did not arrive in time
  header_too_large,           // the request head is larger than 16 KiB
  socks4_refused,             // a SOCKS4 or SOCKS4a request (only SOCKS5 is served)
  socks_command_unsupported,  // a SOCKS5 BIND, UDP ASSOCIATE or unknown command
  // ---- Reaching the destination ----
  dns_not_found,            // the name does not exist or has no addresses
  dns_timeout,              // no DNS answer in time
  dns_error,                // the resolver failed
  connection_refused,       // every address refused the connection
  connection_timeout,       // no address accepted the connection in time
  destination_unavailable,  // no address could be reached (unreachable, reset, ...)
  parent_refused,           // the parent proxy answered the gate's CONNECT with a non-2xx status
  parent_unreachable,       // the parent proxy could not be reached, or its reply was unusable
  // ---- The origin's response (plain HTTP, before any of it reached the client) ----
  upstream_closed,   // the origin closed the connection without a response
  bad_response,      // the origin sent something that is no acceptable HTTP response
  response_timeout,  // the origin sent no response within the idle timeout
  // ---- The gate itself ----
  connection_limit,  // more clients at once than SANDGATE_MAX_CONNECTIONS (or request bodies
                     // held to sign again than the gate holds)
  shutting_down,     // the drain closed the connection before it was set up
  client_closed,     // the client left in the middle of a request head
  no_request,        // the client closed the connection without sending a request
  internal_error,    // an unexpected failure inside the gate ended the connection
};

// One row of the table.
struct ReasonInfo {
  Reason reason;  // the row's own enumerator (the table is indexed by it; checked below)
  // The stable code: lower case words joined by '-'. Never changes once released.
  std::string_view code;
  // The HTTP status of the reply the gate writes when a request ends for this reason; 0 when
  // the gate never replies for it (allowed; a tunnel already established; the client gone).
  unsigned status;
  // The reply's RFC 9209 Proxy-Status `error=` type; empty when `status` is 0. A denial of an
  // address a name resolved to is `destination_ip_prohibited` whatever its reason (see
  // proxy/session/wire/replies.hpp).
  std::string_view proxy_status_error;
  // The verdict of a decision with this reason. (An end line repeats its request's verdict: a
  // plain-HTTP exchange that was allowed and then failed ends with `allow` and, say,
  // `upstream-closed`.)
  Verdict verdict;
  std::string_view description;  // one line for people: when the gate gives this reason
};

inline constexpr std::array<ReasonInfo, 57> kReasons = {{
    // The policy.
    {Reason::allowed, "allowed", 0, "", Verdict::allow, "no rule objected"},
    {Reason::invalid_host, "invalid-host", 400, "http_request_error", Verdict::deny,
     "the destination is no valid host or port"},
    {Reason::loopback, "loopback", 403, "destination_ip_prohibited", Verdict::deny,
     "the destination, or an address its name resolves to, is this machine"},
    {Reason::local_address, "local-address", 403, "destination_ip_prohibited", Verdict::deny,
     "the destination, or an address its name resolves to, is one of this machine's own "
     "addresses (a LAN, docker0 or VPN address)"},
    {Reason::ip_address, "ip-address", 403, "destination_ip_prohibited", Verdict::deny,
     "a raw IP address, and IP literals are not allowed"},
    {Reason::metadata_address, "metadata-address", 403, "destination_ip_prohibited", Verdict::deny,
     "a cloud metadata service or a link-local address"},
    {Reason::private_address, "private-address", 403, "destination_ip_prohibited", Verdict::deny,
     "a private network address, and private networks are blocked"},
    {Reason::reserved_address, "reserved-address", 403, "destination_ip_prohibited", Verdict::deny,
     "a multicast, broadcast, documentation or other never-routable address"},
    {Reason::blocklist, "blocklist", 403, "http_request_denied", Verdict::deny,
     "an entry of the blocklist matches the destination"},
    {Reason::port_not_allowed, "port-not-allowed", 403, "http_request_denied", Verdict::deny,
     "the port is not in SANDGATE_ALLOWED_PORTS"},
    {Reason::ssh_disabled, "ssh-disabled", 403, "http_request_denied", Verdict::deny,
     "SSH (an SSH port, or an SSH client in a tunnel), and SSH is disabled"},
    {Reason::ssh_non_git_host, "ssh-non-git-host", 403, "http_request_denied", Verdict::deny,
     "SSH (an SSH port, or an SSH client in a tunnel) to a host that is not a git host"},
    {Reason::not_allowlisted, "not-allowlisted", 403, "http_request_denied", Verdict::deny,
     "allowlist mode, and no allowlist entry matches the destination"},
    {Reason::launchdarkly, "launchdarkly", 403, "http_request_denied", Verdict::deny,
     "the LaunchDarkly allowlist said no"},
    {Reason::launchdarkly_unreachable, "launchdarkly-unreachable", 403, "http_request_denied",
     Verdict::deny, "LaunchDarkly gave no usable answer, and its failover is deny"},
    {Reason::sni_mismatch, "sni-mismatch", 0, "", Verdict::deny,
     "the TLS ClientHello names another server than the CONNECT host (tunnel closed)"},
    {Reason::sni_missing, "sni-missing", 0, "", Verdict::deny,
     "the TLS ClientHello names no server while the CONNECT names a host (tunnel closed)"},
    {Reason::protocol_mismatch, "protocol-mismatch", 0, "", Verdict::deny,
     "the client's first bytes on a TLS port are not a TLS ClientHello (tunnel closed)"},
    // Destinations no rule decides.
    {Reason::unknown_destination, "unknown-destination", 403, "http_request_denied", Verdict::deny,
     "no rule decides the destination, and unknown destinations are denied (SANDGATE_UNKNOWN)"},
    {Reason::ask_denied, "ask-denied", 403, "http_request_denied", Verdict::deny,
     "a person answered the question about the destination with deny or never"},
    {Reason::ask_timeout, "ask-timeout", 403, "http_request_denied", Verdict::deny,
     "nobody answered the question about the destination in time (SANDGATE_ASK_TIMEOUT)"},
    {Reason::ask_unavailable, "ask-unavailable", 403, "http_request_denied", Verdict::deny,
     "nobody can be asked about the destination (no terminal or admin endpoint, or too many "
     "questions pending)"},
    {Reason::host_mismatch, "host-mismatch", 0, "", Verdict::deny,
     "capture: a plain-HTTP request's Host names another server than the one dialled (closed)"},
    {Reason::dns_refused, "dns-refused", 0, "", Verdict::deny,
     "capture: a DNS query the gate does not answer (a type other than A, AAAA, HTTPS and SVCB, "
     "a name over the length and entropy budget, a malformed query)"},
    // Requests inside a connection.
    {Reason::request_denied, "request-denied", 403, "http_request_denied", Verdict::deny,
     "a deny line of the request rules (SANDGATE_REQUEST_RULES) matches the request"},
    {Reason::request_not_allowed, "request-not-allowed", 403, "http_request_denied", Verdict::deny,
     "the destination has request rules (SANDGATE_REQUEST_RULES) and none allows the request"},
    {Reason::origin_certificate, "origin-certificate", 502, "tls_certificate_error", Verdict::error,
     "inspection: the origin's TLS certificate could not be verified for its name (the reply "
     "and the log name its subject)"},
    {Reason::client_tls_failed, "client-tls-failed", 0, "", Verdict::error,
     "inspection: the client ended the TLS handshake with the gate (it may not trust the gate's "
     "certificate authority; see `sandgate ca`)"},
    {Reason::not_inspectable, "not-inspectable", 403, "http_request_denied", Verdict::deny,
     "the destination has request rules, and the tunnel cannot be inspected (not TLS on a TLS "
     "port: SSH, another protocol or port); plain HTTP and inspected HTTPS reach it"},
    {Reason::secret_refused, "secret-refused", 403, "http_request_denied", Verdict::deny,
     "the request carries a masked secret's sentinel where the gate does not fill it in: "
     "another host than the secret's, plain HTTP, the URL, a field other than a credential's "
     "(--secret)"},
    {Reason::budget_exhausted, "budget-exhausted", 429, "http_request_denied", Verdict::deny,
     "a budget that applies to the destination (SANDGATE_BUDGETS) is spent: bytes sent or "
     "received, connections or requests; a tunnel or exchange already open is cut at the byte "
     "where it ends"},
    // The request.
    {Reason::auth_required, "auth-required", 407, "http_request_denied", Verdict::deny,
     "the gate requires a token and the request carried none"},
    {Reason::auth_failed, "auth-failed", 407, "http_request_denied", Verdict::deny,
     "the request's token is wrong, or its Proxy-Authorization is malformed"},
    {Reason::bad_request, "bad-request", 400, "http_request_error", Verdict::deny,
     "the request is not valid HTTP/1.1, or its framing or body is malformed"},
    {Reason::origin_form, "origin-form", 400, "http_request_error", Verdict::deny,
     "a bare path was sent to the proxy instead of CONNECT or an absolute URL"},
    {Reason::https_absolute_form, "https-absolute-form", 400, "http_request_error", Verdict::deny,
     "an https:// URL was sent as a plain request instead of through CONNECT"},
    {Reason::unsupported_scheme, "unsupported-scheme", 400, "http_request_error", Verdict::deny,
     "the request target is no http:// URL"},
    {Reason::request_timeout, "request-timeout", 408, "http_request_error", Verdict::deny,
     "the request head, or a plain-HTTP request body, did not arrive in time"},
    {Reason::header_too_large, "header-too-large", 431, "http_request_error", Verdict::deny,
     "the request head is larger than 16 KiB"},
    {Reason::socks4_refused, "socks4-refused", 0, "", Verdict::deny,
     "a SOCKS4 or SOCKS4a request; the gate speaks only SOCKS5 (answered with SOCKS4's refusal)"},
    {Reason::socks_command_unsupported, "socks-command-unsupported", 0, "", Verdict::deny,
     "a SOCKS5 BIND, UDP ASSOCIATE or unknown command (answered with command not supported)"},
    // Reaching the destination.
    {Reason::dns_not_found, "dns-not-found", 502, "dns_error", Verdict::error,
     "the name does not exist or has no addresses"},
    {Reason::dns_timeout, "dns-timeout", 504, "dns_timeout", Verdict::error,
     "no DNS answer came in time"},
    {Reason::dns_error, "dns-error", 502, "dns_error", Verdict::error, "the resolver failed"},
    {Reason::connection_refused, "connection-refused", 502, "connection_refused", Verdict::error,
     "every address of the destination refused the connection"},
    {Reason::connection_timeout, "connection-timeout", 504, "connection_timeout", Verdict::error,
     "no address of the destination accepted the connection in time"},
    {Reason::destination_unavailable, "destination-unavailable", 502, "destination_unavailable",
     Verdict::error, "no address of the destination could be reached"},
    {Reason::parent_refused, "parent-refused", 502, "destination_unavailable", Verdict::error,
     "the parent proxy refused the gate's CONNECT (its status is in the details)"},
    {Reason::parent_unreachable, "parent-unreachable", 502, "destination_unavailable",
     Verdict::error,
     "the parent proxy could not be reached in time, or its reply was malformed or too long"},
    // The origin's response.
    {Reason::upstream_closed, "upstream-closed", 502, "http_response_incomplete", Verdict::error,
     "the origin closed the connection without a response"},
    {Reason::bad_response, "bad-response", 502, "http_response_incomplete", Verdict::error,
     "the origin's response is no acceptable HTTP or broke a limit"},
    {Reason::response_timeout, "response-timeout", 502, "http_response_incomplete", Verdict::error,
     "the origin sent no response within the idle timeout"},
    // The gate itself.
    {Reason::connection_limit, "connection-limit", 503, "connection_limit_reached", Verdict::error,
     "the gate is serving SANDGATE_MAX_CONNECTIONS clients already (or holds 64 MiB of request "
     "bodies to sign again with masked secrets)"},
    {Reason::shutting_down, "shutting-down", 0, "", Verdict::error,
     "the gate is shutting down; the connection was closed before it was set up"},
    {Reason::client_closed, "client-closed", 0, "", Verdict::error,
     "the client closed the connection in the middle of a request head"},
    {Reason::no_request, "no-request", 0, "", Verdict::error,
     "the client closed the connection without sending a request"},
    {Reason::internal_error, "internal-error", 0, "", Verdict::error,
     "an unexpected failure inside the gate ended the connection"},
}};

inline constexpr std::size_t kReasonCount = kReasons.size();

constexpr std::size_t reason_index(Reason reason) { return static_cast<std::size_t>(reason); }

constexpr const ReasonInfo& reason_info(Reason reason) { return kReasons[reason_index(reason)]; }

// "ip-address", "ssh-non-git-host", "dns-error", ...
constexpr std::string_view reason_code(Reason reason) { return reason_info(reason).code; }

// The reason whose code is `code`; nothing for an unknown one. A linear search, for what
// carries a reason as text (a reload's revocation, tests), never for the connection path.
std::optional<Reason> find_reason(std::string_view code);

// The log's verdict of a policy denial that report-only mode let through; counted under
// Verdict::deny with the /metrics label enforced="false".
inline constexpr std::string_view kWouldDeny = "would-deny";

// Report-only mode (SANDGATE_ENFORCE=false) logs a denial for one of these reasons as
// `would-deny` and lets the connection proceed: the verdicts of the configured policy (lists,
// ports, SSH, IP literals, private networks, LaunchDarkly, the TLS and SSH checks of a tunnel,
// unknown destinations). Every other denial stays enforced: the address rules for this machine,
// cloud metadata and never-routable addresses (the gate's own address is loopback), and the
// protocol's (a bad request, a missing token, a head too large, ...). A list, not a column of
// kReasons, so that a reason added to the table is enforced in report-only mode unless it is
// named here.
inline constexpr std::array<Reason, 20> kReportableReasons = {
    Reason::ip_address,          Reason::private_address,  Reason::blocklist,
    Reason::port_not_allowed,    Reason::ssh_disabled,     Reason::ssh_non_git_host,
    Reason::not_allowlisted,     Reason::launchdarkly,     Reason::launchdarkly_unreachable,
    Reason::sni_mismatch,        Reason::sni_missing,      Reason::protocol_mismatch,
    Reason::unknown_destination, Reason::ask_denied,       Reason::ask_timeout,
    Reason::ask_unavailable,     Reason::request_denied,   Reason::request_not_allowed,
    Reason::not_inspectable,     Reason::budget_exhausted,
};

// True when report-only mode logs a denial for `reason` as would-deny instead of enforcing it.
constexpr bool reportable(Reason reason) {
  for (Reason r : kReportableReasons) {
    if (r == reason) {
      return true;
    }
  }
  return false;
}

namespace detail {

// The table is indexed by Reason: each row sits at its own enumerator's place, and the last
// enumerator has the last row.
constexpr bool rows_in_order() {
  for (std::size_t i = 0; i < kReasons.size(); ++i) {
    if (reason_index(kReasons[i].reason) != i) {
      return false;
    }
  }
  return kReasons.back().reason == Reason::internal_error;
}

// A reply has an error type and no reply has one; an allow never has a reply of its own.
constexpr bool rows_consistent() {
  for (const ReasonInfo& row : kReasons) {
    if ((row.status == 0) != row.proxy_status_error.empty() || row.code.empty() ||
        row.description.empty() || (row.verdict == Verdict::allow && row.status != 0)) {
      return false;
    }
  }
  return true;
}

}  // namespace detail

static_assert(detail::rows_in_order(), "kReasons: one row per Reason, in enumerator order");
static_assert(detail::rows_consistent(), "kReasons: a status exactly when an error type");

}  // namespace sandgate::rules
