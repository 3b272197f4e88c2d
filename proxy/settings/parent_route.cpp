// The parent proxy's route. See parent_route.hpp.
#include "proxy/settings/parent_route.hpp"

namespace sandgate::settings {

const parent::ParentAddress* parent_for(const settings::Settings& settings, const rules::Host& host,
                                        std::uint16_t port) {
  if (!settings.parent_proxy || settings.parent_exclude.excludes(host, port)) {
    return nullptr;
  }
  return &*settings.parent_proxy;
}

std::string describe_parent(const settings::Settings& settings) {
  if (!settings.parent_proxy) {
    return {};
  }
  std::string text = "parent proxy " + settings.parent_proxy->display() +
                     ": tunnels and plain requests go through it after the gate's own decision";
  if (settings.parent_credentials) {
    text += ", with the credentials of " + settings.parent_credentials_file + " (user " +
            settings.parent_credentials->user + ")";
  }
  if (!settings.parent_exclude.empty()) {
    text += "; dialled directly: " + settings.parent_exclude_text;
  }
  text +=
      ". The parent resolves the names it is asked for, so the address rules (loopback, "
      "private, metadata and blocklisted addresses) cannot check what those names resolve to; "
      "IP-literal destinations are still checked";
  return text;
}

}  // namespace sandgate::settings
