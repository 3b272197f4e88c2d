// The capture DNS server's logic: what the gate answers a confined command's DNS query with, and
// the decision it logs. No I/O (proxy/session/fronts/capture_session.hpp carries the queries over
// UDP and TCP and writes the lines); unit-tested on its own.
//
// What is answered (one rule per query, in this order):
//   - a query that cannot be read: FORMERR when its ID could be read, else nothing (dns-refused);
//   - a name over the budget (name_over_budget: long or random-looking labels, how data would be
//     carried out in names): REFUSED (dns-refused);
//   - a type other than A, AAAA, HTTPS and SVCB (TXT, MX, ANY, PTR, ...): REFUSED (dns-refused);
//   - a name the policy denies: REFUSED, with the policy's reason and rule. The policy decides a
//     destination with a port, a query has none: a name is answered when the policy allows it on
//     at least one port: one of SANDGATE_ALLOWED_PORTS when that is set, else 443, 80 or an SSH
//     port (so a git host that allowlist mode allows for SSH only still resolves). The decision
//     for a connection is then taken on its own port, as for a CONNECT;
//   - HTTPS and SVCB for an allowed name: NOERROR with no records (resolvers fall back to A and
//     AAAA; no service parameters leak in or out);
//   - A and AAAA for an allowed name: its synthetic addresses (AddressBook), TTL kAnswerTtl.
// REFUSED rather than NXDOMAIN for a denied name: it says "not from this server" without
// claiming the name does not exist, and resolvers report it at once (no search-list walk).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "proxy/capture/dns_wire.hpp"
#include "proxy/capture/synthetic_addresses.hpp"
#include "rules/policy.hpp"
#include "rules/reason.hpp"

namespace sandgate::capture {

// Seconds an answer may be cached by the command's resolver: short, because the book recycles
// the addresses of names unused for long when it is full.
inline constexpr std::uint32_t kAnswerTtl = 60;

// Names the book holds at once (its least recently used names give their addresses up beyond).
inline constexpr std::size_t kDefaultBookCapacity = 65536;

// The run's name <-> synthetic address book, shared by the DNS server (one worker) and the
// captured connections (every worker). Each call holds a mutex for one hash lookup and a list
// splice: a DNS answer and a captured connection's start each take it once, never a byte of a
// tunnel. Thread-safe.
class AddressBook {
 public:
  // A fresh random unique-local /64 (RFC 4193: fd + 40 random bits + a zero subnet) per run.
  explicit AddressBook(std::size_t capacity = kDefaultBookCapacity);
  // For tests: a fixed prefix.
  AddressBook(const std::array<std::uint8_t, 8>& v6_prefix, std::size_t capacity);

  SyntheticAddresses::Pair assign(const std::string& name);
  // The name whose synthetic address `address` is, if it still is one.
  std::optional<std::string> name_of(const rules::IpAddress& address);
  // Whether `address` lies in the run's synthetic ranges, handed out or not.
  bool is_synthetic(const rules::IpAddress& address);

 private:
  std::mutex mutex_;
  SyntheticAddresses book_;
};

// The decision line a query gets (the session writes it with method "DNS").
struct DnsDecision {
  std::string name;  // the name asked for, "-" when none could be read
  std::string type;  // "A", "AAAA", "HTTPS", "SVCB", "TXT", ..., "TYPE99"
  rules::Reason reason = rules::Reason::allowed;
  std::string rule;    // "file:line entry" when a list entry decided
  std::string detail;  // a sentence: what was answered, or why not
  // Report-only mode: `reason` denies the name, but it was answered and is logged as would-deny.
  bool would_deny = false;
};

struct DnsReply {
  std::vector<std::uint8_t> bytes;  // at most kClassicUdpLimit; empty: send nothing
  // The line to log; nothing for an answer not worth one (HTTPS/SVCB for an allowed name: the
  // A and AAAA queries beside it carry the decision).
  std::optional<DnsDecision> decision;
};

// The answer to one query `message` (UDP payload, or a TCP message without its length) under
// `policy`, assigning synthetic addresses from `book`. Thread-safe (the book locks).
// A name no rule decides under --unknown=ask is answered: the question is asked when its
// connection comes (a refused lookup would fail the tool before anyone could be asked). With
// `report_only` (settings enforce=false), a name denied for a reportable reason is answered too
// and its line says would-deny, unless report-only mode keeps that denial (enforced_anyway).
DnsReply answer_query(std::span<const std::uint8_t> message, const rules::Policy& policy,
                      AddressBook& book, bool report_only = false);

// The policy's port-less decision for a name (see the header comment): the first allowing
// decision over the candidate ports, else the decision on the first candidate. Pure.
rules::Decision decide_name(const rules::Policy& policy, const rules::Host& host,
                            std::uint16_t* port_used = nullptr);

// "A", "AAAA", ..., "TYPE<n>" for the log.
std::string type_name(std::uint16_t type);

}  // namespace sandgate::capture
