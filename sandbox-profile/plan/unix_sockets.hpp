// Which unix sockets a confined command on Linux may reach. The network namespace of
// `sandgate run` cuts off every TCP/UDP route and every abstract unix socket, but sockets bound to
// a path stay reachable through the file system, and many are ways out: a container daemon
// (`docker run --network host`), a D-Bus session bus (a service file it then starts outside),
// `systemd-run --user`, tmux, screen and editor servers, SSH ControlMaster sockets, name lookups
// through nscd or systemd-resolved that bypass the gate's policy.
//
// Deny by default, with an allow-list: the folders where daemons keep their sockets (/run,
// /var/run, /tmp, /var/tmp, /dev/shm, $XDG_RUNTIME_DIR) are private, empty tmpfs in the command's
// mount namespace (a socket a daemon re-creates there after start, on a restart, stays out of
// reach), and only the allowed sockets are bound back in. Sockets bound to a path found elsewhere
// at start-up (in the home, /var/lib, ...), of every type (a datagram socket is as reachable as a
// listening one), are covered with /dev/null. The one system socket kept by
// default is the SSH agent ($SSH_AUTH_SOCK): git over SSH through the gate signs with it, and it
// carries no traffic and starts nothing.
//
// Pure functions on values (the caller reads /proc/net/unix and the file system); thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sandgate::sandbox {

// The paths of every path-bound socket in the text of /proc/net/unix, whatever its type
// (stream, datagram, seqpacket) and state (listening, connected, bound only): a header line, then
// one socket a line; abstract sockets, shown with a leading '@', and unnamed ones are left out.
// A path appears once per socket bound to it (duplicates are the caller's to drop).
std::vector<std::string> bound_unix_sockets(std::string_view proc_net_unix);

// True for the sockets kept without being listed: only the SSH agent (`ssh_auth_sock`, may be
// empty). Logging (/dev/log), nscd and systemd-resolved are not kept: the command needs none of
// them, and name lookups must go through the gate.
bool is_system_socket(std::string_view path, std::string_view ssh_auth_sock);

// The folders made private (empty tmpfs) in the command's view, before checking that each
// exists and is a folder: /run, /var/run, /tmp, /var/tmp, /dev/shm and `runtime_dir`
// ($XDG_RUNTIME_DIR, may be empty) unless it lies in one of the others.
std::vector<std::string> private_socket_folders(const std::string& runtime_dir);

// Well-known container daemon socket paths (system and per-user) worth checking even when
// /proc/net/unix does not list them (rootless daemons bind in a namespace of their own).
std::vector<std::string> well_known_container_sockets(const std::string& home, unsigned uid);

struct MaskInputs {
  std::vector<std::string> sockets;  // candidates: listening ones and existing well-known ones
  std::vector<std::string> allowed;  // --allow-unix-socket, resolved: never hidden
  std::string ssh_auth_sock;
  bool strict = false;  // kept for the flag's sake: every socket not allowed is hidden anyway
  std::vector<std::string> private_folders;  // sockets in these are out of reach already
};

// The sockets to cover with /dev/null: every candidate but the allowed ones, the SSH agent and
// those in a private folder; sorted, without duplicates.
std::vector<std::string> sockets_to_hide(const MaskInputs& inputs);

}  // namespace sandgate::sandbox
