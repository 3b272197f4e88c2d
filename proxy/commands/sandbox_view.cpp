// The gate as the confinement sees it. See sandbox_view.hpp.
#include "proxy/commands/sandbox_view.hpp"

namespace sandgate::commands {

sandbox::GateView gate_view(const settings::Settings& settings) {
  sandbox::GateView view;
  for (const std::string* path : {&settings.blocklist_path, &settings.allowlist_path,
                                  &settings.config_path, &settings.log_file}) {
    if (!path->empty()) {
      view.files.push_back(*path);
    }
  }
  if (const settings::UnixPath* socket = settings.listen.unix_socket()) {
    view.unix_socket = socket->path;
  }
  return view;
}

std::uint16_t listen_port(const settings::Settings& settings) {
  const settings::TcpEndpoint* tcp = settings.listen.tcp();
  return tcp != nullptr ? tcp->port : 0;
}

}  // namespace sandgate::commands
