// The capture DNS server's logic. See dns_server.hpp.
#include "proxy/capture/dns_server.hpp"

#ifdef __linux__
#include <sys/random.h>
#endif

#include <algorithm>
#include <random>

#include "rules/host.hpp"

namespace sandgate::capture {
namespace {

std::array<std::uint8_t, 8> random_ula_prefix() {
  std::array<std::uint8_t, 8> prefix{};
  prefix[0] = 0xfd;
  std::array<std::uint8_t, 5> global{};
#ifdef __linux__
  const bool drawn =
      ::getrandom(global.data(), global.size(), 0) == static_cast<ssize_t>(global.size());
#else
  const bool drawn = false;  // capture is Linux-only; the book still works elsewhere in tests
#endif
  if (!drawn) {
    // No getrandom (an old kernel): the standard library's source, still not guessable in
    // practice, and the prefix only has to differ from the networks a machine may route to.
    std::random_device device;
    for (auto& byte : global) {
      byte = static_cast<std::uint8_t>(device());
    }
  }
  std::copy(global.begin(), global.end(), prefix.begin() + 1);
  return prefix;  // subnet ID (bytes 6 and 7) zero
}

DnsReply refused(std::span<const std::uint8_t> message, const Query& query, std::string type,
                 std::string detail) {
  DnsReply reply;
  reply.bytes = build_response(message, query, ResponseCode::refused);
  reply.decision = DnsDecision{query.name.empty() ? "." : query.name,
                               std::move(type),
                               rules::Reason::dns_refused,
                               {},
                               std::move(detail)};
  return reply;
}

}  // namespace

AddressBook::AddressBook(std::size_t capacity) : book_(random_ula_prefix(), capacity) {}

AddressBook::AddressBook(const std::array<std::uint8_t, 8>& v6_prefix, std::size_t capacity)
    : book_(v6_prefix, capacity) {}

SyntheticAddresses::Pair AddressBook::assign(const std::string& name) {
  std::lock_guard lock(mutex_);
  return book_.assign(name);
}

std::optional<std::string> AddressBook::name_of(const rules::IpAddress& address) {
  std::lock_guard lock(mutex_);
  return book_.name_of(address);
}

bool AddressBook::is_synthetic(const rules::IpAddress& address) {
  std::lock_guard lock(mutex_);
  return book_.is_synthetic(address);
}

std::string type_name(std::uint16_t type) {
  switch (static_cast<QueryType>(type)) {
    case QueryType::a:
      return "A";
    case QueryType::ns:
      return "NS";
    case QueryType::cname:
      return "CNAME";
    case QueryType::soa:
      return "SOA";
    case QueryType::ptr:
      return "PTR";
    case QueryType::mx:
      return "MX";
    case QueryType::txt:
      return "TXT";
    case QueryType::aaaa:
      return "AAAA";
    case QueryType::srv:
      return "SRV";
    case QueryType::opt:
      return "OPT";
    case QueryType::svcb:
      return "SVCB";
    case QueryType::https:
      return "HTTPS";
    case QueryType::any:
      return "ANY";
  }
  return "TYPE" + std::to_string(type);
}

rules::Decision decide_name(const rules::Policy& policy, const rules::Host& host,
                            std::uint16_t* port_used) {
  // The candidate ports: bounded, so that a long SANDGATE_ALLOWED_PORTS list costs at most 64
  // decisions for one query.
  constexpr std::size_t kMaxCandidates = 64;
  std::vector<std::uint16_t> ports;
  const auto& options = policy.options();
  if (!options.allowed_ports.empty()) {
    for (std::size_t i = 0; i < options.allowed_ports.size() && i < kMaxCandidates; ++i) {
      ports.push_back(options.allowed_ports[i]);
    }
  } else {
    ports = {443, 80};
    for (std::size_t i = 0; i < options.ssh_ports.size() && ports.size() < kMaxCandidates; ++i) {
      ports.push_back(options.ssh_ports[i]);
    }
  }
  std::optional<rules::Decision> first;
  std::uint16_t first_port = ports.front();
  for (const std::uint16_t port : ports) {
    rules::Decision decision = policy.decide(host, port);
    if (decision.allowed()) {
      if (port_used != nullptr) {
        *port_used = port;
      }
      return decision;
    }
    if (!first) {
      first = std::move(decision);
      first_port = port;
    }
  }
  if (port_used != nullptr) {
    *port_used = first_port;
  }
  return *first;
}

DnsReply answer_query(std::span<const std::uint8_t> message, const rules::Policy& policy,
                      AddressBook& book, bool report_only) {
  auto parsed = parse_query(message);
  if (!parsed) {
    DnsReply reply;
    if (parsed.error().id) {
      reply.bytes = format_error(*parsed.error().id);
    }
    reply.decision = DnsDecision{"-",
                                 "-",
                                 rules::Reason::dns_refused,
                                 {},
                                 "a malformed DNS query (" + parsed.error().problem + ")."};
    return reply;
  }
  const Query& query = *parsed;
  const std::string type = type_name(query.type);
  if (auto over = name_over_budget(query.name)) {
    return refused(message, query, type,
                   "the name is over the gate's budget for names (" + *over +
                       "): DNS is not a way to carry data out.");
  }
  const auto kind = static_cast<QueryType>(query.type);
  const bool address_query = kind == QueryType::a || kind == QueryType::aaaa;
  if (!address_query && kind != QueryType::https && kind != QueryType::svcb) {
    return refused(message, query, type,
                   type +
                       " queries are not answered inside `sandgate run`: only A, AAAA, HTTPS "
                       "and SVCB.");
  }
  if (query.name.empty()) {
    return refused(message, query, type, "a query for the root is not answered.");
  }
  auto host = rules::parse_host(query.name);
  if (!host) {
    return refused(message, query, type,
                   "'" + query.name + "' is no valid host name: " +
                       std::string(rules::to_string(host.error())) + ".");
  }
  std::uint16_t port = 0;
  const rules::Decision decision = decide_name(policy, *host, &port);
  DnsReply reply;
  const bool ask_later = !decision.allowed() && decision.ask;
  const bool would_deny = !decision.allowed() && !ask_later && report_only &&
                          rules::reportable(decision.reason) &&
                          !policy.enforced_anyway(*host, port).has_value();
  if (!decision.allowed() && !ask_later && !would_deny) {
    reply.bytes = build_response(message, query, ResponseCode::refused);
    reply.decision = DnsDecision{host->name, type, decision.reason, rules::rule_text(decision),
                                 policy.explain(decision, *host, port)};
    return reply;
  }
  if (!address_query) {
    reply.bytes = build_response(message, query, ResponseCode::no_error);
    return reply;  // HTTPS/SVCB: no records, no line
  }
  const SyntheticAddresses::Pair pair = book.assign(host->name);
  const rules::IpAddress& address = kind == QueryType::a ? pair.v4 : pair.v6;
  reply.bytes = build_response(message, query, ResponseCode::no_error,
                               std::span<const rules::IpAddress>(&address, 1), kAnswerTtl);
  const std::string answered = "answered " + type + " " + address.to_string();
  if (would_deny) {
    reply.decision =
        DnsDecision{host->name,
                    type,
                    decision.reason,
                    rules::rule_text(decision),
                    policy.explain(decision, *host, port) + " Report-only: " + answered + ".",
                    true};
  } else if (ask_later) {
    reply.decision = DnsDecision{host->name,
                                 type,
                                 rules::Reason::allowed,
                                 {},
                                 "no rule decides the name: " + answered +
                                     " (synthetic: its connection is held on a question)."};
  } else {
    reply.decision =
        DnsDecision{host->name, type, rules::Reason::allowed, rules::rule_text(decision),
                    answered + " (synthetic: the connection to it is decided when it comes)."};
  }
  return reply;
}

}  // namespace sandgate::capture
