// Which destinations go through the parent proxy (--parent-proxy, less --parent-exclude), and
// the start-up line that says so: what the settings alone decide, for the connection path
// (session/admission.cpp), the gate's start-up and `sandgate check`.
#pragma once

#include <cstdint>
#include <string>

#include "proxy/parent/parent_proxy.hpp"
#include "proxy/settings/settings.hpp"
#include "rules/host.hpp"

namespace sandgate::settings {

// The parent proxy a connection to host:port goes through: none when no parent is configured
// or the exclusion list names the destination (then it is dialled directly, as without one).
const parent::ParentAddress* parent_for(const settings::Settings& settings, const rules::Host& host,
                                        std::uint16_t port);

// The start-up line about the parent (nothing without one): where it is, whether credentials
// and exclusions are set, and that the address rules cannot check the names it resolves.
// The password is never in it.
std::string describe_parent(const settings::Settings& settings);

}  // namespace sandgate::settings
