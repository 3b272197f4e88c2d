// `sandgate ca [--rotate]`: the inspection CA (proxy/inspect/certificate_authority.hpp): where its
// certificate is, what it is, and how to make clients trust it; made if there is none yet.
#pragma once

#include <ostream>

#include "proxy/settings/settings.hpp"

namespace sandgate::commands {

// Exit status 0, or 2 when the CA cannot be read or made (the message names the file).
int run_ca(const settings::Settings& settings, bool rotate, std::ostream& out, std::ostream& err);

}  // namespace sandgate::commands
