// The resolver's options as the settings give them: the one place the gate (and `sandgate check
// --resolve`) turn settings into ResolverOptions, so both resolve alike.
#pragma once

#include "proxy/dns/resolver.hpp"
#include "proxy/settings/settings.hpp"

namespace sandgate::dns {

inline ResolverOptions resolver_options(const settings::Settings& settings) {
  ResolverOptions options;
  options.endpoints = settings.dns_servers;
  options.timeout = settings.dns_timeout;
  options.cache_capacity = settings.dns_cache_size;
  options.max_ttl = settings.dns_max_ttl;
  options.negative_ttl = settings.dns_negative_ttl;
  return options;
}

}  // namespace sandgate::dns
