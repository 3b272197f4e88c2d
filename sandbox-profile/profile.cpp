// The Seatbelt profile. See profile.hpp.
//
// SBPL evaluates every rule that matches an operation and the last one decides, so the profile
// is laid out as: allow everything, then deny what must not happen, then re-allow the few
// exceptions to those denials. Each section says which setting or flag it comes from.
#include "sandbox-profile/profile.hpp"

#include <algorithm>
#include <set>

#include "sandbox-profile/protected_paths.hpp"
#include "sandbox-profile/sbpl_string.hpp"

namespace sandgate::sandbox {
namespace {

constexpr const char* kIndent = "    ";

// Builds the text; remembers the first path that could not be quoted.
class ProfileWriter {
 public:
  void line(const std::string& text) {
    out_ += text;
    out_ += '\n';
  }
  void blank() { out_ += '\n'; }

  // `path` as an SBPL string; on failure records `what` and the problem, returns "".
  std::string quote(const std::string& path, const std::string& what) {
    auto quoted = sbpl_path(path);
    if (!quoted) {
      if (error_.empty()) {
        error_ = what + " '" + printable(path) + "' " + std::string(describe(quoted.error())) +
                 ": it cannot be put into a Seatbelt profile safely";
      }
      return "\"\"";
    }
    return *quoted;
  }

  // `(ACTION OPERATION\n    filter\n    filter)`.
  void rule(const std::string& head, const std::vector<std::string>& filters) {
    if (filters.empty()) {
      return;
    }
    if (filters.size() == 1) {
      line("(" + head + " " + filters.front() + ")");
      return;
    }
    std::string text = "(" + head;
    for (const auto& filter : filters) {
      text += "\n";
      text += kIndent;
      text += filter;
    }
    line(text + ")");
  }

  const std::string& error() const { return error_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
  std::string error_;
};

// Every proper ancestor folder of `path`, below "/", outermost first.
std::vector<std::string> ancestors(const std::string& path) {
  std::vector<std::string> out;
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    out.push_back(path.substr(0, slash));
  }
  return out;
}

template <typename T>
std::vector<T> sorted_unique(std::vector<T> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

void write_file_rules(ProfileWriter& w, const ProfileOptions& options) {
  const auto paths = protected_paths({.home = options.home,
                                      .protect_files = options.protect_files,
                                      .platform = Platform::macos,
                                      .gate_files = options.gate_files});
  const auto filter = [&w](const ProtectedPath& p) {
    return std::string(p.tree ? "(subpath " : "(literal ") +
           w.quote(p.path, p.always ? "gate file" : "protected path") + ")";
  };
  std::vector<std::string> always;
  std::vector<std::string> optional;
  for (const auto& p : paths) {
    (p.always ? always : optional).push_back(filter(p));
  }
  w.line(";; Writes: the gate's own configuration, whatever the settings say. It decides where");
  w.line(";; this sandbox may connect, and sandgate reloads it as it changes.");
  w.rule("deny file-write*", always);
  if (!optional.empty()) {
    w.line(";; Writes: places to persist or escalate from (GOOSE_SANDBOX_PROTECT_FILES): shell");
    w.line(";; start-up files, ~/.ssh, ~/.gnupg, goose's configuration, LaunchAgents.");
    w.rule("deny file-write*", optional);
  }

  // Renaming a folder above a protected path would carry the path out of reach of the rules
  // above (mv ~/.config ~/x; edit ~/x/goose/...; mv ~/x ~/.config).
  std::set<std::string> folders;
  for (const auto& p : paths) {
    for (auto& folder : ancestors(p.path)) {
      folders.insert(std::move(folder));
    }
  }
  std::vector<std::string> unlink_filters;
  for (const auto& folder : folders) {
    const bool covered = std::any_of(paths.begin(), paths.end(), [&](const ProtectedPath& p) {
      return p.tree && is_within(folder, p.path);
    });
    if (!covered) {
      unlink_filters.push_back("(literal " + w.quote(folder, "folder") + ")");
    }
  }
  w.line(";; Folders above protected paths may not be renamed or removed.");
  w.rule("deny file-write-unlink", unlink_filters);
}

void write_network_rules(ProfileWriter& w, const ProfileOptions& options) {
  w.line(";; Network: nothing at all, then the exceptions below.");
  w.line("(deny network*)");
  w.line(";; Name resolution through the system's resolver.");
  w.line("(allow network-outbound (literal \"/private/var/run/mDNSResponder\"))");

  // Unix sockets.
  if (options.strict_unix_sockets) {
    w.line(";; Unix sockets (--strict-unix-sockets): only the system's own (logging, the launchd");
    w.line(";; SSH agent, SSH_AUTH_SOCK) and those listed with --allow-unix-socket.");
    std::vector<std::string> system = {
        "(remote unix-socket (path-literal \"/private/var/run/syslog\"))",
        "(remote unix-socket (path-regex "
        "#\"^/private/tmp/com\\.apple\\.launchd\\.[^/]+/Listeners$\"))"};
    if (!options.ssh_auth_sock.empty()) {
      system.push_back("(remote unix-socket (path-literal " +
                       w.quote(options.ssh_auth_sock, "SSH_AUTH_SOCK") + "))");
    }
    w.rule("allow network-outbound", system);
  } else {
    w.line(";; Unix sockets: allowed, except those of container and VM daemons (docker, podman,");
    w.line(";; containerd, colima, lima): each of them can start a process outside the sandbox.");
    w.line("(allow network-outbound (remote unix-socket))");
    w.rule("deny network-outbound",
           {std::string("(remote unix-socket (path-regex #\"") + kContainerSocketRegex + "\"))",
            "(remote unix-socket (subpath " + w.quote(options.home + "/.colima", "folder") + "))",
            "(remote unix-socket (subpath " + w.quote(options.home + "/.lima", "folder") + "))"});
  }
  w.line(";; Serving on a unix socket is local and stays allowed.");
  w.line("(allow network-bind (local unix-socket (path-regex #\"^/\")))");
  const auto sockets = sorted_unique(options.allow_unix_sockets);
  if (!sockets.empty()) {
    w.line(";; --allow-unix-socket");
    std::vector<std::string> filters;
    for (const auto& path : sockets) {
      filters.push_back("(remote unix-socket (path-literal " +
                        w.quote(path, "--allow-unix-socket") + "))");
    }
    w.rule("allow network-outbound", filters);
  }

  // TCP and UDP: only localhost, only these ports.
  w.line(";; The gate: the only way out.");
  w.line("(allow network-outbound (remote ip \"localhost:" + std::to_string(options.proxy_port) +
         "\"))");
  const auto outbound = sorted_unique(options.allow_localhost_ports);
  if (!outbound.empty()) {
    w.line(";; --allow-localhost-port");
    for (auto port : outbound) {
      w.line("(allow network-outbound (remote ip \"localhost:" + std::to_string(port) + "\"))");
    }
  }
  const auto inbound = sorted_unique(options.allow_inbound_ports);
  if (!inbound.empty()) {
    w.line(";; --allow-inbound-port: servers inside the sandbox that local clients may reach.");
    for (auto port : inbound) {
      const std::string local = "(local ip \"localhost:" + std::to_string(port) + "\")";
      w.line("(allow network-bind " + local + ")");
      w.line("(allow network-inbound " + local + ")");
    }
  }
}

}  // namespace

Expected<std::string, std::string> generate_profile(const ProfileOptions& options) {
  if (options.proxy_port == 0) {
    return Unexpected{std::string("the profile needs the gate's port (1..65535)")};
  }
  for (auto port : options.allow_localhost_ports) {
    if (port == 0) {
      return Unexpected{std::string("--allow-localhost-port: expected a port, 1..65535")};
    }
  }
  for (auto port : options.allow_inbound_ports) {
    if (port == 0) {
      return Unexpected{std::string("--allow-inbound-port: expected a port, 1..65535")};
    }
  }

  ProfileWriter w;
  // The home folder is checked first so that its error is the one reported.
  w.quote(options.home, "home folder");
  w.line(";; sandgate's Seatbelt profile (SBPL), made by `sandgate profile`. Use:");
  w.line(";;   sandbox-exec -f THIS_FILE COMMAND [ARGS...]");
  w.line(";; with the gate listening on 127.0.0.1:" + std::to_string(options.proxy_port) +
         ". In SBPL the last rule that matches");
  w.line(";; an operation decides: each deny narrows the allow before it.");
  w.line("(version 1)");
  w.line("(allow default)");
  w.blank();
  write_file_rules(w, options);
  w.blank();
  write_network_rules(w, options);
  w.blank();
  if (options.block_raw_sockets) {
    w.line(";; Raw IP sockets (GOOSE_SANDBOX_BLOCK_RAW_SOCKETS).");
    w.line("(deny system-socket (require-all (socket-domain AF_INET) (socket-type SOCK_RAW)))");
    w.line("(deny system-socket (require-all (socket-domain AF_INET6) (socket-type SOCK_RAW)))");
  }
  if (options.block_tunneling) {
    w.line(
        ";; Tunnelling tools wherever they are installed, by name "
        "(GOOSE_SANDBOX_BLOCK_TUNNELING).");
    w.line(std::string("(deny process-exec (regex #\"") + kTunnelingRegex + "\"))");
  }
  w.line("(deny system-kext-load)");
  if (!w.error().empty()) {
    return Unexpected{w.error()};
  }
  return w.take();
}

}  // namespace sandgate::sandbox
