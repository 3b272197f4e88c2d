// Reading the masked secrets a gate starts with, one way for `serve` and `run`: each value from
// this process's environment (or its file or command), and its sentinel at random or, with
// --stable-sentinels, from the user's sentinel key kept beside the inspection CA (outside every
// sandbox: `run` hides the CA's folder from the command).
#pragma once

#include <memory>
#include <string>

#include "proxy/secrets/masked_secrets.hpp"
#include "proxy/settings/settings.hpp"
#include "rules/expected.hpp"

namespace sandgate::gate {

// Where the user's sentinel key is kept: in the inspection CA's folder.
std::string sentinel_key_path(const settings::Settings& settings);

// The secrets `settings` names, loaded (masked_secrets.hpp). The error names the secret, or the
// sentinel key's file, and what failed; never a value.
Expected<std::shared_ptr<const secrets::MaskedSecrets>, std::string> load_masked_secrets(
    const settings::Settings& settings);

}  // namespace sandgate::gate
