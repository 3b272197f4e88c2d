// The credential variables agents and their tools are commonly given, and the API hosts each
// belongs to: `--secret NAME` without hosts binds NAME to them, and `run` names each one it would
// pass into the sandbox unmasked.
//
// Only hosts that take the credential in a header field the gate fills (request_secrets.hpp) are
// listed: the API, not the hosts a tool downloads from (a CDN, a release asset's storage).
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::secrets {

struct KnownCredential {
  std::string_view variable;  // GITHUB_TOKEN
  std::string_view hosts;     // comma-separated, as an entry of --secret writes them
  std::string_view service;   // GitHub: for messages
};

// Every known credential, in a stable order.
std::span<const KnownCredential> known_credentials();

// The one named `variable` (exact case), or null.
const KnownCredential* known_credential(std::string_view variable);

// The known credentials `environment` holds a value for (not empty) that are not among `named`
// (the variables --secret masks already), in the table's order: what `run` masks by default, or
// warns of.
std::vector<const KnownCredential*> known_credentials_set(
    const std::function<std::optional<std::string>(const std::string&)>& environment,
    const std::vector<std::string>& named);

}  // namespace sandgate::secrets
