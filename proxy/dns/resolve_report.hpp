// `sandgate check --resolve NAME`: what the gate's resolver would do with a name, printed for an
// operator. The hosts file's entry (which the gate answers from, and keeps until the file
// changes), a fresh lookup through the configured name servers with its TTL, what the cache
// would then hold and for how long, and each address the gate would dial held to the policy.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "proxy/settings/settings.hpp"
#include "rules/policy.hpp"

namespace sandgate::dns {

// Runs its own event loop on the calling thread until the lookup ends (at most the dns_timeout
// setting). Returns true when every address the gate would dial is allowed by `policy` (and
// there is at least one), false otherwise.
bool print_resolution(const settings::Settings& settings, const rules::Policy& policy,
                      const std::string& name, std::uint16_t port, std::ostream& out);

}  // namespace sandgate::dns
