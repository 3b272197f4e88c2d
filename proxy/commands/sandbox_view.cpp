// The gate as the confinement sees it. See sandbox_view.hpp.
#include "proxy/commands/sandbox_view.hpp"

#include <charconv>

namespace sandgate::commands {

sandbox::GateView gate_view(const settings::Settings& settings) {
  sandbox::GateView view;
  for (const std::string* path : {&settings.blocklist_path, &settings.allowlist_path,
                                  &settings.config_path, &settings.log_file}) {
    if (!path->empty()) {
      view.files.push_back(*path);
    }
  }
  if (auto socket = settings::unix_listen_path(settings.listen)) {
    view.unix_socket = std::string(*socket);
  }
  return view;
}

std::uint16_t listen_port(const settings::Settings& settings) {
  const auto colon = settings.listen.rfind(':');
  if (colon == std::string::npos || settings::unix_listen_path(settings.listen)) {
    return 0;
  }
  unsigned value = 0;
  const char* first = settings.listen.data() + colon + 1;
  const char* last = settings.listen.data() + settings.listen.size();
  auto [end, error] = std::from_chars(first, last, value);
  if (error != std::errc() || end != last || value > 65535) {
    return 0;
  }
  return static_cast<std::uint16_t>(value);
}

}  // namespace sandgate::commands
