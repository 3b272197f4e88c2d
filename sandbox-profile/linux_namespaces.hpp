// Linux confinement for `sandgate run`, done by the forked child before it executes the
// command: new user, network and mount namespaces (unprivileged, and also when run as root),
// with loopback as the only interface; the gate's listening socket made there and handed to
// the parent, which serves on it from the host's network namespace. The gate is thus the only
// way out: the child can reach nothing but its own loopback, and the parent dials upstream.
//
// Every function here runs in the single-threaded child, between fork() and exec().
#pragma once

#include <string>
#include <vector>

#include "rules/expected.hpp"
#include "sandbox-profile/protected_paths.hpp"

namespace sandgate::sandbox {

// What the parent decided before fork().
struct NamespacePlan {
  unsigned uid = 0;  // the caller's ids, mapped to themselves inside
  unsigned gid = 0;
  std::vector<std::string> hide_sockets;       // unix sockets to cover with /dev/null
  std::vector<ProtectedPath> protected_paths;  // writes denied with Landlock where available
};

// What the child managed, reported to the parent (one line each, for the start-up message).
struct NamespaceReport {
  int landlock_abi = 0;             // 0: no Landlock
  std::size_t landlock_paths = 0;   // paths protected
  std::string landlock_note;        // why not, when not
  std::vector<std::string> hidden;  // sockets covered

  std::string serialize() const;
  static NamespaceReport parse(const std::string& text);
};

// Enters the namespaces, maps the ids, brings loopback up, hides the sockets, opens the
// listener (127.0.0.1, port 0) and applies Landlock. Returns the listener. The error is a
// sentence for the user: what failed and, for the usual causes, why and what to do.
Expected<int, std::string> enter_namespaces(const NamespacePlan& plan, NamespaceReport& report);

// Last step before exec: no_new_privs, an empty capability bounding set and no capabilities,
// so the command (even as root inside) cannot undo the confinement.
Expected<bool, std::string> drop_privileges();

}  // namespace sandgate::sandbox
