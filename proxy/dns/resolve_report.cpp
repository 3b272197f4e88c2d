// `sandgate check --resolve` (contract: resolve_report.hpp).
#include "proxy/dns/resolve_report.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>

#include "proxy/dns/resolver.hpp"
#include "proxy/dns/resolver_settings.hpp"
#include "rules/reason.hpp"

namespace sandgate::dns {
namespace {

namespace asio = boost::asio;

// A named coroutine (never a capturing lambda: GCC 12 frame bugs).
asio::awaitable<void> resolve_into(Resolver* resolver, std::string name,
                                   std::optional<Resolution>* out) {
  *out = co_await resolver->resolve(std::move(name));
}

std::string join(const std::vector<asio::ip::address>& addresses) {
  std::string text;
  for (const auto& address : addresses) {
    text += (text.empty() ? "" : " ") + address.to_string();
  }
  return text;
}

rules::IpAddress to_rules(const asio::ip::address& address) {
  if (address.is_v4()) {
    return rules::IpAddress::from_v4(address.to_v4().to_uint());
  }
  return rules::IpAddress::from_v6(address.to_v6().to_bytes());
}

}  // namespace

bool print_resolution(const settings::Settings& settings, const rules::Policy& policy,
                      const std::string& name, std::uint16_t port, std::ostream& out) {
  const ResolverOptions options = resolver_options(settings);
  asio::io_context io;

  // The hosts file, as the gate reads it (it answers before any name server).
  Resolver with_hosts(io, options);
  const std::vector<asio::ip::address> listed = with_hosts.hosts_entry(name);
  out << "hosts file " << (options.hosts_file.empty() ? "(none)" : options.hosts_file) << ": "
      << (listed.empty() ? "(no entry)" : join(listed) + " (kept until the file changes)") << "\n";

  // A fresh lookup through the configured servers, the hosts file left out.
  ResolverOptions dns_only = options;
  dns_only.hosts_file.clear();
  Resolver fresh(io, dns_only);
  std::optional<Resolution> result;
  asio::co_spawn(io, resolve_into(&fresh, name, &result), asio::detached);
  // Until the answer, not until the loop is idle: c-ares may keep a socket watched.
  while (!result && io.run_one() > 0) {
  }
  const std::string servers = settings.dns_servers.empty() ? std::string("the system's") : [&] {
    std::string text;
    for (const auto& server : settings.dns_servers) {
      text += (text.empty() ? "" : ",") + server.text();
    }
    return text;
  }();
  out << "dns (" << servers << "): ";
  if (!result) {
    out << "no answer\n";
  } else if (result->error == ResolveError::none) {
    out << join(result->addresses) << " (TTL " << result->ttl.count() << " s)\n";
  } else {
    out << to_string(result->error);
    if (result->error == ResolveError::not_found) {
      out << " (negative TTL " << result->ttl.count() << " s)";
    }
    out << "\n";
  }

  // What the cache then holds for the name, and for how long.
  out << "cache: ";
  if (const std::optional<CachedAnswer> held = fresh.cached(name)) {
    out << (held->error == ResolveError::none ? join(held->addresses)
                                              : std::string(to_string(held->error)))
        << " for " << held->expires_in.count() << " s (caps: dns_max_ttl "
        << options.max_ttl.count() << " s, dns_negative_ttl " << options.negative_ttl.count()
        << " s)\n";
  } else if (options.cache_capacity == 0) {
    out << "off (dns_cache_size 0)\n";
  } else {
    out << "nothing (not cacheable: a TTL of 0, no SOA, or a failure that says nothing of the "
           "name)\n";
  }

  // The addresses the gate would dial, each held to the address rules as the gate does.
  const std::vector<asio::ip::address>& used = !listed.empty() ? listed
                                               : result && result->error == ResolveError::none
                                                   ? result->addresses
                                                   : std::vector<asio::ip::address>{};
  bool all_allowed = !used.empty();
  for (const auto& address : used) {
    const rules::Decision decision = policy.decide_resolved(to_rules(address), port);
    all_allowed = all_allowed && decision.allowed();
    out << "address " << address.to_string() << ": "
        << rules::verdict_name(rules::reason_info(decision.reason).verdict) << " ("
        << rules::reason_code(decision.reason) << ")\n";
  }
  return all_allowed;
}

}  // namespace sandgate::dns
