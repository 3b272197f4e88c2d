// The gate as the confinement sees it. See sandbox_view.hpp.
#include "proxy/commands/sandbox_view.hpp"

#include "proxy/inspect/certificate_authority.hpp"

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
  // The CA's key is never the command's to read, whether or not this gate inspects.
  view.unreadable.push_back(inspect_ca_folder(settings));
  // Nor are the gate's own keys: its token and admin token files (the command must not answer
  // its own questions, nor carry a token to the gates that need one) and the parent proxy's
  // credentials.
  for (const std::string* path :
       {&settings.token_file, &settings.admin_token_file, &settings.parent_credentials_file}) {
    if (!path->empty()) {
      view.secret_files.push_back(*path);
    }
  }
  // A masked credential read from a file: the command holds its sentinel, not the file.
  for (const auto& spec : settings.secrets) {
    if (spec.source == secrets::SecretSource::file) {
      view.secret_files.push_back(spec.from);
    }
  }
  return view;
}

std::string inspect_ca_folder(const settings::Settings& settings) {
  return settings.ca_dir.empty() ? inspect::default_ca_folder(settings::home_directory())
                                 : settings.ca_dir;
}

std::uint16_t listen_port(const settings::Settings& settings) {
  const settings::TcpEndpoint* tcp = settings.listen.tcp();
  return tcp != nullptr ? tcp->port : 0;
}

}  // namespace sandgate::commands
