// The macOS Seatbelt profile (SBPL) that `sandgate run` confines a command with and that
// `sandgate profile` prints. Deny-default, like Anthropic's sandbox-runtime and Chromium's and
// Apple's own profiles: nothing is allowed that a rule does not name.
//   - processes: exec and fork; process information and signals only within the sandbox; no
//     task ports of other processes; no set-user-ID helper (kDeniedSetuidHelpers);
//   - reads: everything but what is hidden: the credential stores, the user's mail, messages,
//     browsing and accounts (kMacosHiddenFolders), the inspection CA's folder (last of all the
//     read rules), the packet-capture devices /dev/bpf* and the user's other terminals;
//   - writes: only the folders writable_folders() lists (the working folder, the repository's
//     git folders, the temporary folders, known tools' download caches, --allow-write), the few
//     devices tools write (/dev/null, the terminal, ...), and never the protected paths
//     (protected_paths(), for $HOME and for the passwd entry's home, and macOS's autostart
//     places), spelled as given, resolved through symbolic links and case-folded (APFS is
//     case-insensitive); git folders only where a commit writes, without symbolic links; no
//     nested `.git` in the working or --allow-write folders; no hard links; the folders above
//     protected paths kept from being created, renamed or removed, those above hidden paths
//     from being renamed or removed; no ioctl on the user's terminals (TIOCSTI);
//   - Mach services: only kAllowedMachServices, each with its reason (trustd only when asked);
//     no pasteboard, window server, Bonjour, Launch Services, Apple events, launchd jobs or
//     background transfers;
//   - network: TCP only: on localhost to the gate's port (on its family) and to
//     --allow-localhost-port ports; serving only on --allow-inbound-port ports (any local port
//     only with --allow-local-bind); unix sockets only SSH_AUTH_SOCK, the gate's own socket and
//     --allow-unix-socket paths, matched by path when the command connects (so one re-created
//     later is still refused), bound only in the run's private folders;
//   - named sysctl reads (kReadableSysctls), no sysctl writes but the JVM's one; no IOKit user
//     clients;
//   - tunnelling tools denied by executable name wherever they are installed;
//   - every path escaped; a path that cannot be represented safely is an error.
//
// Pure: the same options always give the same text (the golden tests rely on it). Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rules/expected.hpp"
#include "sandbox-profile/plan/home_caches.hpp"
#include "sandbox-profile/plan/protected_paths.hpp"

namespace sandgate::sandbox {

struct ProfileOptions {
  // Folders the command must not read at all (the inspection CA's): denied reads and writes.
  std::vector<std::string> unreadable;
  // The credential stores (plan/credential_stores.hpp): denied reads and writes, after every
  // allow they would otherwise fall under; `secret_shown` (inside them) readable again.
  std::vector<std::string> secret_folders;
  std::vector<std::string> secret_files;
  std::vector<std::string> secret_shown;
  std::string home;  // absolute and normal, e.g. "/Users/ada" ($HOME)
  // The passwd entry's home (getpwuid's pw_dir), absolute and normal; "" or equal to `home`
  // when they agree. When HOME was changed, the real home's protected paths are protected too:
  // ssh, gpg, login shells and launchd find their files there, not in $HOME.
  std::string real_home;
  std::uint16_t proxy_port = 0;  // the gate, on localhost (1..65535)
  std::string gate_unix_socket;  // the gate's unix socket (listen unix:PATH); "" for none. A
                                 // profile needs a proxy_port, this socket, or both.
  std::vector<std::uint16_t> allow_localhost_ports;    // more localhost TCP destinations
  std::vector<std::uint16_t> allow_inbound_ports;      // localhost ports the command may serve on
  std::vector<std::string> allow_unix_sockets;         // absolute socket paths
  std::vector<std::string> allow_unix_socket_folders;  // sockets anywhere below these folders
  // --strict-unix-sockets. On macOS unix sockets are always an allow-list, so it changes
  // nothing here; kept so that both systems read the same flags.
  bool strict_unix_sockets = false;
  std::string ssh_auth_sock;      // the ssh agent's socket, allowed; empty: none
  bool allow_local_bind = false;  // --allow-local-bind: serve on and connect to any local port
  bool protect_files = true;      // GOOSE_SANDBOX_PROTECT_FILES
  bool block_raw_sockets = true;  // GOOSE_SANDBOX_BLOCK_RAW_SOCKETS
  bool block_tunneling = true;    // GOOSE_SANDBOX_BLOCK_TUNNELING
  std::vector<std::string> gate_files;  // the gate's blocklist, allowlist, config and log files
  // Writable besides the working folder (see writable_folders()):
  std::string temp_dir;                   // $TMPDIR, resolved ("" if unset)
  std::vector<std::string> allow_writes;  // --allow-write folders, resolved
  std::vector<std::string> home_caches;   // kHomeCaches that exist as real folders
  // The terminals the command inherits (ttyname of standard input, output and error, resolved,
  // e.g. "/dev/ttys003"): readable and writable, never ioctl-able: they are the user's, and
  // TIOCSTI on one types commands into the user's shell, which runs them after the command
  // exits, outside the sandbox (the same holds for /dev/tty).
  std::vector<std::string> terminals;
  // The terminals are the pseudo-terminal the supervisor relays for this run, not the user's
  // (the pty relay, as on Linux): then they and /dev/tty may be ioctl'd (raw mode, window size),
  // since TIOCSTI there only types into the command's own input. `run` sets it whenever it relays
  // (profile_options.hpp's add_run_places()).
  bool terminals_relayed = false;
  // Folders that belong to this run alone (made for it, removed after it; nothing outside
  // connects to a socket there): the only places the command may bind unix sockets. Empty:
  // no unix socket may be bound at all.
  std::vector<std::string> private_folders;
  // Allow com.apple.trustd.agent (TLS certificate checks through Security.framework), which
  // fetches the URLs a certificate names (OCSP, CRL, issuers) itself, outside the gate. Off
  // unless asked: a certificate the command makes up names the URL trustd fetches.
  bool allow_trustd = false;
  // The gate listens on ::1 rather than 127.0.0.1 (listen [::1]:PORT): its port is allowed over
  // TCP on IPv6 instead of IPv4.
  bool gate_on_ipv6 = false;
  // What the process and the file system say (see ProtectionInputs and with_process_inputs()):
  std::string working_directory;
  std::vector<std::string> git_dirs;
  std::vector<std::string> path_entries;
  std::vector<std::string> own_executables;
  // Resolved spellings of protected paths that go through symbolic links, from
  // resolved_spellings(): protected too, with the same flags.
  std::vector<ProtectedPath> resolved_spellings;
};

// The protection inputs the options describe (for protected_paths()), for $HOME.
ProtectionInputs protection_inputs(const ProfileOptions& options);

// Every path the profile write-protects: protected_paths() for $HOME, then for the real home
// when it differs (without the gate's files again), the resolved spellings not already covered,
// and the unix sockets the command may connect to (the gate's and the agent's: a command that
// replaced one would serve the programs outside that connect to it). No duplicates.
std::vector<ProtectedPath> profile_protected_paths(const ProfileOptions& options);

// A folder the command may write below (file-write*), and why.
struct WritableFolder {
  std::string path;  // absolute and normal; the folder and everything below it
  std::string why;   // one line, for the profile's comment
};

// The folders writes are allowed in, in a fixed order, without duplicates, never "/": the working
// folder, the enclosing repository's git folders, $TMPDIR (not the per-user cache folder beside
// it), /private/tmp and /private/var/tmp, the home's download caches, --allow-write folders.
// Protected and hidden paths inside them stay denied; so do git folders but for what a commit
// writes.
std::vector<WritableFolder> writable_folders(const ProfileOptions& options);

// The sysctl values the command may read, by name (sysctl-name): what runtimes, build tools and
// `uname` ask for (CPU count and kind, memory and page size, the OS's name and version, the host
// name, limits such as ARG_MAX). Never the process table (kern.proc.*) or another process's
// arguments and environment (kern.procargs2: `ps -E` would show the gate's), nor open files or
// sockets (kern.file, net.*). The same kind of list as sandbox-runtime's and Codex's.
inline constexpr const char* kReadableSysctls[] = {
    "hw.ncpu",
    "hw.activecpu",
    "hw.logicalcpu",
    "hw.logicalcpu_max",
    "hw.physicalcpu",
    "hw.physicalcpu_max",
    "hw.packages",
    "hw.nperflevels",
    "hw.cputype",
    "hw.cpusubtype",
    "hw.cpufamily",
    "hw.cpusubfamily",
    "hw.cpu64bit_capable",
    "hw.byteorder",
    "hw.machine",
    "hw.model",
    "hw.vectorunit",
    "hw.cacheconfig",
    "hw.cachesize",
    "hw.cachelinesize",
    "hw.l1icachesize",
    "hw.l1dcachesize",
    "hw.l2cachesize",
    "hw.l3cachesize",
    "hw.cpufrequency",
    "hw.cpufrequency_max",
    "hw.busfrequency",
    "hw.tbfrequency",
    "hw.cachelinesize_compat",
    "hw.l1icachesize_compat",
    "hw.l1dcachesize_compat",
    "hw.l2cachesize_compat",
    "hw.l3cachesize_compat",
    "hw.cpufrequency_compat",
    "hw.busfrequency_compat",
    "hw.tbfrequency_compat",
    "hw.pagesize_compat",
    "hw.memsize",
    "hw.physmem",
    "hw.pagesize",
    "vm.loadavg",
    "vm.swapusage",
    "kern.ostype",
    "kern.osrelease",
    "kern.osversion",
    "kern.osproductversion",
    "kern.osproductversioncompat",
    "kern.osvariant_status",
    "kern.version",
    "kern.hostname",
    "kern.boottime",
    "kern.clockrate",
    "kern.argmax",
    "kern.maxfiles",
    "kern.maxfilesperproc",
    "kern.maxproc",
    "kern.maxprocperuid",
    "kern.ngroups",
    "kern.usrstack64",
    "kern.secure_kernel",
    "kern.hv_support",
    "kern.hv_vmm_present",
    "sysctl.proc_cputype",
    "sysctl.proc_translated",
    "sysctl.proc_native",
};

// Readable by prefix (sysctl-name-prefix): CPU features (SIMD paths of compilers, codecs,
// numpy), Apple silicon's performance levels, the CPU's brand and features.
inline constexpr const char* kReadableSysctlPrefixes[] = {"hw.optional.", "hw.perflevel",
                                                          "machdep.cpu."};

// A Mach service the command may look up, and why it needs it.
struct MachService {
  const char* name;
  const char* why;  // one line, for the profile's comment and the README
};

// The only Mach services the command may look up. Every other one is refused, among them the
// pasteboard, the window server, Bonjour and DNS (mDNSResponder: name lookups are the gate's),
// Launch Services, Apple events, launchd, nsurlsessiond, cfprefsd, the keychain (securityd).
inline constexpr MachService kAllowedMachServices[] = {
    {"com.apple.system.opendirectoryd.libinfo",
     "user and group lookups (getpwuid, getgrgid): git, ssh, ~ expansion, id"},
    {"com.apple.system.opendirectoryd.membership",
     "group membership checks (mbr_*, getgrouplist) that access decisions make"},
    {"com.apple.bsd.dirhelper",
     "the per-user temporary and cache folders (confstr _CS_DARWIN_USER_TEMP_DIR)"},
    {"com.apple.FSEvents", "file watchers (fsevents: watchman, chokidar, cargo watch, jest)"},
    {"com.apple.system.notification_center",
     "notify(3), which libSystem uses for time zone and configuration changes"},
    {"com.apple.logd", "the unified log (os_log) for the command's own messages"},
    {"com.apple.system.logger", "syslog(3) and ASL for the command's own messages"},
};

// Allowed only with allow_trustd: TLS certificate verification through Security.framework (Go,
// Rust's native-tls, Swift, curl with Secure Transport). trustd fetches the revocation and
// issuer URLs a certificate names itself, outside the gate.
inline constexpr MachService kTrustdService = {
    "com.apple.trustd.agent",
    "TLS certificate verification through Security.framework (asked for: it fetches the URLs a "
    "certificate names, outside the gate)"};

// The profile text, or an error naming the option or path that cannot be used and why.
Expected<std::string, std::string> generate_profile(const ProfileOptions& options);

// The path of sandbox-exec, which `run` requires on macOS.
inline constexpr const char* kSandboxExecPath = "/usr/bin/sandbox-exec";

// The words to put in front of the command to confine it: sandbox-exec with the profile given
// inline (`-p TEXT`). Never a file: a file in a shared temporary folder could be rewritten by
// a process left from an earlier run between writing it and sandbox-exec reading it.
Expected<std::vector<std::string>, std::string> sandbox_exec_argv(const ProfileOptions& options);

// A case-insensitive SBPL regex source for exactly `path` (tree: the path and everything
// below it): every ASCII letter as a [xX] class, other regex characters escaped, anchored.
// AppleMatch has no (?i) flag: a profile with one loads, and the rule matches nothing.
std::string case_folded_regex(const std::string& path, bool tree);

// The set-user-ID helpers never run, by path (a copy elsewhere loses the bit): a command that
// shares the user's terminal (`sandbox-exec` run by hand with this profile) would have sudo use a
// live ticket of the user's shell (no password asked),
// and su, login, the authorization trampoline, at and crontab act as root or schedule code that
// runs outside the sandbox later.
inline constexpr const char* kDeniedSetuidHelpers[] = {
    "/usr/bin/sudo",   "/usr/bin/su",      "/usr/bin/login",
    "/usr/bin/at",     "/usr/bin/batch",   "/usr/bin/atq",
    "/usr/bin/atrm",   "/usr/bin/crontab", "/usr/libexec/security_authtrampoline",
    "/usr/bin/newgrp",
};

// The executables denied when block_tunneling is on, matched by name anywhere: as an SBPL
// regex, and as the names it matches (for documentation and tests).
inline constexpr const char* kTunnelingRegex = "/(nc|ncat|netcat|socat|telnet)$";

}  // namespace sandgate::sandbox
