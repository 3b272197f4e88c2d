// The Seatbelt profile. See profile.hpp.
//
// How libsandbox orders rules: the compiler turns every operation's rules, in the order the
// profile gives them, into one chain per operation, and the kernel tries that chain from the
// most recent rule backwards: the first rule whose filters match decides. So for one operation
// a later rule overrides an earlier one, whatever the specificity of their filters (a later
// broad allow undoes an earlier narrow deny). A rule for a wildcard (file-write*, network*) is
// a rule for each operation it names, at its place in the profile; an operation that no rule
// matches falls back to `default`, which is deny. The filters of one rule are alternatives (any
// one matches); require-all makes a conjunction. Hence the layout: deny everything, allow what
// a command needs, then deny the exceptions inside those allows (protected paths inside the
// writable folders, tunnelling tools among executables), each after the allow it narrows.
#include "sandbox-profile/macos/profile.hpp"

#include <algorithm>
#include <set>

#include "sandbox-profile/macos/macos_places.hpp"
#include "sandbox-profile/macos/sbpl_string.hpp"
#include "sandbox-profile/plan/protected_paths.hpp"

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
  bool ok() const { return error_.empty(); }

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

// The filters for `paths`: each as written (literal or subpath), then each case-folded (regex).
// Seatbelt compares the path after symbolic links are resolved, byte for byte for literal and
// subpath; APFS and HFS+ are case-insensitive by default, so ~/.BASH_LOGIN is ~/.bash_login.
std::vector<std::string> path_filters(ProfileWriter& w, const std::vector<ProtectedPath>& paths,
                                      const std::string& what) {
  std::vector<std::string> filters;
  for (const auto& p : paths) {
    filters.push_back(std::string(p.tree ? "(subpath " : "(literal ") + w.quote(p.path, what) +
                      ")");
  }
  if (!w.ok()) {
    return filters;  // never build a regex from a path that failed its checks
  }
  for (const auto& p : paths) {
    filters.push_back("(regex " + sbpl_quote(case_folded_regex(p.path, p.tree)) + ")");
  }
  return filters;
}

void write_process_rules(ProfileWriter& w, const ProfileOptions& options) {
  w.line(";; Processes: run programs and fork. Process information (proc_pidinfo, task_for_pid's");
  w.line(";; inspection) and signals only within this sandbox: the gate and the user's other");
  w.line(";; programs can be neither read nor stopped from inside. No task ports of other");
  w.line(";; processes (mach-priv-task-port, mach-task-name): not allowed, so denied.");
  w.line("(allow process-exec)");
  w.line("(allow process-fork)");
  w.line("(allow process-info* (target same-sandbox))");
  w.line("(allow signal (target same-sandbox))");
  w.line(";; Set-user-ID helpers: sudo would use a live ticket of the user's terminal; su, login,");
  w.line(";; at and crontab act as root or schedule what runs outside the sandbox later.");
  std::string helpers = "(deny process-exec";
  for (const char* helper : kDeniedSetuidHelpers) {
    helpers += std::string("\n") + kIndent + "(literal " + sbpl_quote(helper) + ")";
  }
  w.line(helpers + ")");
  if (options.block_tunneling) {
    w.line(
        ";; Tunnelling tools wherever they are installed, by name "
        "(GOOSE_SANDBOX_BLOCK_TUNNELING).");
    w.line(std::string("(deny process-exec (regex #\"") + kTunnelingRegex + "\"))");
  }
}

void write_system_rules(ProfileWriter& w) {
  w.line(";; System information: the sysctl values runtimes and build tools read, by name");
  w.line(";; (CPU count and kind, memory, the OS's version, limits); never the process table");
  w.line(";; or another process's arguments and environment (kern.proc, kern.procargs2). No");
  w.line(";; sysctl writes but kern.grade_cputype, which the JVM's CPU probe sets to read it.");
  w.line(";; Preferences may be read, not written (cfprefsd is not reachable either). IOKit:");
  w.line(";; registry properties may be read; no user client may be opened (no iokit-open).");
  std::string sysctls = "(allow sysctl-read";
  for (const char* name : kReadableSysctls) {
    sysctls += std::string("\n") + kIndent + "(sysctl-name " + sbpl_quote(name) + ")";
  }
  for (const char* prefix : kReadableSysctlPrefixes) {
    sysctls += std::string("\n") + kIndent + "(sysctl-name-prefix " + sbpl_quote(prefix) + ")";
  }
  w.line(sysctls + ")");
  w.line("(allow sysctl-write (sysctl-name \"kern.grade_cputype\"))");
  w.line("(allow user-preference-read)");
  w.line("(allow iokit-get-properties)");
  w.line(";; POSIX shared memory and semaphores: Node, Python's multiprocessing (SemLock).");
  w.line("(allow ipc-posix-shm)");
  w.line("(allow ipc-posix-sem)");
}

void write_mach_rules(ProfileWriter& w, const ProfileOptions& options) {
  w.line(";; Mach services: only these. Every other lookup is refused: the pasteboard, the window");
  w.line(";; server, Bonjour and DNS (mDNSResponder: the gate resolves names), Launch Services");
  w.line(";; (`open`), Apple events (`osascript`), launchd jobs, nsurlsessiond (transfers that");
  w.line(";; bypass the gate), cfprefsd (preference writes), securityd (the keychain), and trustd");
  w.line(";; unless asked (it fetches the URLs a certificate names, outside the gate).");
  std::string text = "(allow mach-lookup";
  const auto add = [&text](const MachService& service) {
    text += std::string("\n") + kIndent + ";; " + service.why + "\n" + kIndent + "(global-name " +
            sbpl_quote(service.name) + ")";
  };
  for (const auto& service : kAllowedMachServices) {
    add(service);
  }
  if (options.allow_trustd) {
    add(kTrustdService);
  }
  w.line(text + ")");
}

// What git writes in a git folder to commit, fetch, merge, stash and check out: objects, refs and
// their logs, the index and the pseudo-refs, each also as NAME.lock (git's lock files). Not:
// config, config.worktree, hooks/, info/ (attributes pick filters), commondir and gitdir (they
// redirect git elsewhere), modules/ and worktrees/ (more of both), rebase-merge/, rebase-apply/
// and sequencer/ (their todo lists run `exec` lines when the user continues), description.
constexpr const char* kGitWritableFolders[] = {"objects", "refs", "logs"};
constexpr const char* kGitWritableFiles[] = {
    "index",      "HEAD",        "ORIG_HEAD",   "FETCH_HEAD",       "MERGE_HEAD",  "MERGE_MSG",
    "MERGE_MODE", "AUTO_MERGE",  "MERGE_RR",    "CHERRY_PICK_HEAD", "REVERT_HEAD", "COMMIT_EDITMSG",
    "SQUASH_MSG", "TAG_EDITMSG", "packed-refs", "shallow",          "gc.pid",      "gc.log"};

// A case-folded regex for every `.git` entry below `folder` (a nested repository's folder, a
// worktree's or submodule's gitfile), `folder`'s own `.git` included.
std::string nested_git_regex(const std::string& folder) {
  std::string prefix = case_folded_regex(folder, false);
  prefix.pop_back();  // the closing '$'
  return prefix + "/(.*/)?\\.[gG][iI][tT]($|/)";
}

// Reads everywhere; writes in the writable folders but their git folders, of which only what a
// commit writes. Allows only: every deny that narrows them comes after (the last match wins).
void write_file_allows(ProfileWriter& w, const ProfileOptions& options) {
  w.line(";; Reads: everything but what the denials below hide (credential stores, the user's");
  w.line(";; mail, messages and browsing, the inspection CA, packet capture, other terminals).");
  w.line("(allow file-read*)");

  std::vector<std::string> writable;
  w.line(";; Writes: only in these folders.");
  for (const auto& folder : writable_folders(options)) {
    w.line(";;   " + folder.why + ": " + printable(folder.path));
    writable.push_back("(subpath " + w.quote(folder.path, "writable folder") + ")");
  }
  w.rule("allow file-write*", writable);

  // Inside a shared download cache, the folders where a tool keeps git repositories it runs git
  // in later (Go's VCS cache): never written (home_caches.hpp; on Linux the run gets an empty
  // one).
  std::vector<ProtectedPath> unshared;
  for (const auto& cache : options.home_caches) {
    for (const char* inside : kUnsharedInHomeCaches) {
      const std::string path = options.home + inside;
      if (path.starts_with(cache + "/")) {
        unshared.push_back({path, true, false});
      }
    }
  }
  if (!unshared.empty()) {
    w.line(";; Git repositories inside a shared cache: not written (git runs in them later).");
    w.rule("deny file-write*", path_filters(w, unshared, "cache's git folder"));
  }

  // Git folders: read-only (as Codex keeps them), then what a commit writes is opened again.
  // A nested repository, or a gitfile, made in the working folder or an --allow-write folder
  // would have the user's git obey a config and hooks of the command's choosing the next time
  // it runs there; the temporary folders are left out (a clone there is an agent's daily work,
  // and nothing of the user's runs git in them unasked).
  std::vector<ProtectedPath> git_dirs;
  for (const auto& dir : options.git_dirs) {
    git_dirs.push_back({dir, true, false});
  }
  std::vector<std::string> git_denies = path_filters(w, git_dirs, "git folder");
  std::vector<std::string> nested_in = {options.working_directory};
  nested_in.insert(nested_in.end(), options.allow_writes.begin(), options.allow_writes.end());
  for (const auto& folder : sorted_unique(nested_in)) {
    if (!folder.empty() && folder != "/") {
      w.quote(folder, "writable folder");
      if (w.ok()) {
        git_denies.push_back("(regex " + sbpl_quote(nested_git_regex(folder)) + ")");
      }
    }
  }
  if (!git_denies.empty()) {
    w.line(";; Git folders, nested repositories and gitfiles: not written (the user's git would");
    w.line(";; obey a config, hooks or a redirection of the command's making) ...");
    w.rule("deny file-write*", git_denies);
  }
  std::vector<std::string> commit_parts;
  for (const auto& dir : options.git_dirs) {
    for (const char* folder : kGitWritableFolders) {
      commit_parts.push_back("(subpath " + w.quote(dir + "/" + folder, "git folder") + ")");
    }
    for (const char* name : kGitWritableFiles) {
      for (const char* suffix : {"", ".lock"}) {
        commit_parts.push_back("(literal " + w.quote(dir + "/" + name + suffix, "git folder") +
                               ")");
      }
    }
  }
  if (!commit_parts.empty()) {
    w.line(";; ... but for what git writes to commit, fetch, merge and check out.");
    w.rule("allow file-write*", commit_parts);
  }
}

// The devices tools write to, the command's terminals and its own ptys.
void write_device_rules(ProfileWriter& w, const ProfileOptions& options) {
  w.line(";; Devices: data may be written to the null and zero devices, dtrace's helper (USDT");
  w.line(";; probes of node and python), descriptors already held (/dev/fd, /dev/stdout) and the");
  w.line(";; controlling terminal. No other device.");
  w.line("(allow file-write-data");
  for (const char* device : {"/dev/null", "/dev/zero", "/dev/dtracehelper", "/dev/tty"}) {
    w.line(std::string(kIndent) + "(literal \"" + device + "\")");
  }
  w.line(std::string(kIndent) + "(subpath \"/dev/fd\"))");
  w.line(
      "(allow file-ioctl (literal \"/dev/null\") (literal \"/dev/zero\") "
      "(literal \"/dev/dtracehelper\"))");
  w.line(";; The contents of terminals: reading another terminal of the user's would take the");
  w.line(";; keys typed there (the command's own terminals are allowed again below).");
  w.line("(deny file-read-data file-write* (regex #\"^/dev/ttys[0-9]+$\"))");
  std::vector<std::string> terminals;
  for (const auto& terminal : sorted_unique(options.terminals)) {
    terminals.push_back("(literal " + w.quote(terminal, "terminal") + ")");
  }
  w.line(";; The terminals the command was started on: read and written, never ioctl'd (they are");
  w.line(";; the user's: see the end of the file rules). The pseudo-terminals it opens itself");
  w.line(";; (openpty: script, expect, node-pty) carry the sandbox's pty extension: its own.");
  if (options.terminals_relayed) {
    w.line(";; Here they are the pty the supervisor relays for this run: ioctl'd too.");
    w.rule("allow file-read* file-write-data file-ioctl", terminals);
    w.line("(allow file-ioctl (literal \"/dev/tty\"))");
  } else {
    w.rule("allow file-read* file-write-data", terminals);
  }
  w.line("(allow pseudo-tty)");
  w.line("(allow file-read* file-write-data file-ioctl (literal \"/dev/ptmx\"))");
  w.line("(allow file-read* file-write-data file-ioctl");
  w.line(std::string(kIndent) +
         "(require-all (regex #\"^/dev/ttys[0-9]+$\") (extension \"com.apple.sandbox.pty\")))");
}

// What is hidden: neither read nor written. After every allow, so that no writable folder, and no
// shown path but the credential stores' own, re-opens it.
std::vector<ProtectedPath> hidden_paths(const ProfileOptions& options) {
  std::vector<ProtectedPath> out;
  const auto add = [&out](const std::string& path, bool tree) {
    const bool known = std::any_of(out.begin(), out.end(), [&](const ProtectedPath& p) {
      return p.path == path || (p.tree && is_within(path, p.path));
    });
    if (!known) {
      out.push_back({path, tree, true});
    }
  };
  for (const auto& folder : options.secret_folders) {
    add(folder, true);
  }
  for (const auto& file : options.secret_files) {
    add(file, false);
  }
  for (const auto& home : {options.home, options.real_home}) {
    for (const auto& folder : macos_hidden_folders(home)) {
      add(folder, true);
    }
  }
  return out;
}

void write_hidden_rules(ProfileWriter& w, const ProfileOptions& options) {
  w.line(";; The packet-capture devices (as root, /dev/bpf* reads the host's traffic).");
  w.line("(deny file-read* file-write* (regex #\"^/dev/bpf\"))");
  const auto hidden = hidden_paths(options);
  if (!hidden.empty()) {
    w.line(";; Credential stores (--allow-read PATH opens one) and the user's mail, messages,");
    w.line(";; browsing, contacts and accounts (a terminal with Full Disk Access would pass them");
    w.line(";; on): neither read nor written, in every spelling (APFS is case-insensitive).");
    w.rule("deny file-read* file-write*", path_filters(w, hidden, "credential store"));
  }
  std::vector<std::string> shown;
  for (const auto& path : options.secret_shown) {
    shown.push_back("(subpath " + w.quote(path, "readable in a credential store") + ")");
  }
  if (!shown.empty()) {
    w.line(";; What stays readable in them (~/.ssh's known hosts and public keys, --allow-read).");
    w.rule("allow file-read*", shown);
  }
  std::vector<ProtectedPath> unreadable;
  for (const auto& folder : options.unreadable) {
    unreadable.push_back({folder, true, true});
  }
  if (!unreadable.empty()) {
    w.line(";; The inspection CA's folder: its key signs certificates clients trust. Last of the");
    w.line(";; reads: nothing re-opens it.");
    w.rule("deny file-read* file-write*", path_filters(w, unreadable, "unreadable folder"));
  }
}

// The folders above `paths` that no tree among `paths` covers.
std::vector<ProtectedPath> folders_above(const std::vector<ProtectedPath>& paths) {
  std::set<std::string> folders;
  for (const auto& p : paths) {
    for (auto& folder : ancestors(p.path)) {
      folders.insert(std::move(folder));
    }
  }
  std::vector<ProtectedPath> above;
  for (const auto& folder : folders) {
    const bool covered = std::any_of(paths.begin(), paths.end(), [&](const ProtectedPath& p) {
      return p.tree && is_within(folder, p.path);
    });
    if (!covered) {
      above.push_back({folder, false, false});
    }
  }
  return above;
}

// The protected paths, denied inside the writable folders: the gate's own files always, the
// places that run code later when the options protect them.
void write_never_written(ProfileWriter& w, const std::vector<ProtectedPath>& paths) {
  std::vector<ProtectedPath> always;
  std::vector<ProtectedPath> optional;
  for (const auto& p : paths) {
    (p.always ? always : optional).push_back(p);
  }
  const auto always_filters = path_filters(w, always, "gate file");
  w.line(";; Never written, inside the writable folders too: the gate's own configuration and");
  w.line(";; executables, whatever the settings say (they decide where this sandbox may connect,");
  w.line(";; and sandgate reloads its lists live), the sockets the command may connect to, and");
  w.line(";; the places macOS starts programs from by itself (launchd agents and daemons, login");
  w.line(";; items).");
  w.rule("deny file-write*", always_filters);
  if (!optional.empty()) {
    const auto optional_filters = path_filters(w, optional, "protected path");
    w.line(";; Never written: every place that runs code later, outside the sandbox");
    w.line(";; (GOOSE_SANDBOX_PROTECT_FILES): shell start-up files, git's configuration and this");
    w.line(";; repository's hooks and config, keys and configuration in ~/.ssh and ~/.gnupg,");
    w.line(";; PATH folders, cron and launchd's system folders, goose's config.");
    w.rule("deny file-write*", optional_filters);
  }
}

// The folders above the protected paths and above the hidden ones.
void write_folders_above(ProfileWriter& w, const std::vector<ProtectedPath>& paths,
                         const ProfileOptions& options) {
  // The folders above a protected path may be neither renamed nor removed (mv ~/.config ~/x;
  // edit ~/x/goose/...; mv ~/x ~/.config), nor created when missing: a missing ~/.config made a
  // symbolic link to a folder of the command's, or a folder renamed into its place, would bring
  // planted files under the protected names (rename and symlink both create the entry).
  const auto above = folders_above(paths);
  w.line(";; Folders above protected paths may not be created, renamed or removed.");
  w.rule("deny file-write-create file-write-unlink", path_filters(w, above, "folder"));
  // The folders above a hidden path may not be renamed (a rename is an unlink of the old name):
  // mv ~/.cache/huggingface ~/x would make ~/x/token a name no deny covers.
  std::vector<ProtectedPath> hidden = hidden_paths(options);
  for (const auto& folder : options.unreadable) {
    hidden.push_back({folder, true, true});
  }
  std::vector<ProtectedPath> hidden_above;
  for (const auto& folder : folders_above(hidden)) {
    const bool done = std::any_of(above.begin(), above.end(),
                                  [&](const ProtectedPath& p) { return p.path == folder.path; }) ||
                      std::any_of(paths.begin(), paths.end(), [&](const ProtectedPath& p) {
                        return p.path == folder.path || (p.tree && is_within(folder.path, p.path));
                      });
    if (!done) {
      hidden_above.push_back(folder);
    }
  }
  if (!hidden_above.empty()) {
    w.line(";; Folders above hidden paths may not be renamed or removed.");
    w.rule("deny file-write-unlink", path_filters(w, hidden_above, "folder"));
  }
}

// Links in git folders, hard links and set-user-ID bits.
void write_link_rules(ProfileWriter& w, const ProfileOptions& options) {
  std::vector<std::string> git_links;
  for (const auto& dir : options.git_dirs) {
    git_links.push_back("(require-all (subpath " + w.quote(dir, "git folder") +
                        ") (vnode-type SYMLINK))");
  }
  if (!git_links.empty()) {
    w.line(";; No symbolic links in git folders: the user's git would write through them");
    w.line(";; (COMMIT_EDITMSG or index made a link to ~/.zshrc).");
    w.rule("deny file-write-create", git_links);
  }
  w.line(";; No hard links at all: a link made in a writable folder to a file outside would be a");
  w.line(";; writable second name for it (Seatbelt matches names, not files). Git, cargo and pnpm");
  w.line(";; fall back to renaming or copying. No set-user-ID or set-group-ID bits either.");
  w.line("(deny file-link)");
  w.line("(deny file-write-setugid)");
}

// The user's terminals, when the command's is not a relayed pty of its own.
void write_terminal_rules(ProfileWriter& w, const ProfileOptions& options) {
  if (options.terminals_relayed) {
    return;
  }
  std::vector<std::string> terminals = {"(literal \"/dev/tty\")"};
  for (const auto& terminal : sorted_unique(options.terminals)) {
    terminals.push_back("(literal " + w.quote(terminal, "terminal") + ")");
  }
  w.line(";; No ioctl on the user's terminal (the controlling one, and those on 0-2): TIOCSTI");
  w.line(";; would type commands into the user's shell, which runs them after the command exits,");
  w.line(";; outside the sandbox. Seatbelt cannot tell TIOCSTI from the ioctls that isatty() and");
  w.line(";; raw mode need, so the command sees no terminal there (as if its output were piped).");
  w.rule("deny file-ioctl", terminals);
}

// The protected paths, denied inside the writable folders; the folders above them and above the
// hidden paths; links in git folders, hard links, set-user-ID bits and the user's terminals.
void write_protected_rules(ProfileWriter& w, const ProfileOptions& options) {
  const auto paths = profile_protected_paths(options);
  write_never_written(w, paths);
  write_folders_above(w, paths, options);
  write_link_rules(w, options);
  write_terminal_rules(w, options);
}

void write_file_rules(ProfileWriter& w, const ProfileOptions& options) {
  write_file_allows(w, options);
  write_device_rules(w, options);
  write_hidden_rules(w, options);
  write_protected_rules(w, options);
}

// The kinds of socket the command may make.
void write_socket_kinds(ProfileWriter& w, const ProfileOptions& options) {
  w.line(";; Network: nothing but the exceptions below. No mDNSResponder: the gate resolves");
  w.line(";; names; a resolver the command can query is a channel out (DNS queries). Sockets may");
  w.line(";; be made for unix, IPv4 and IPv6 only (no routing, kernel-control or link-layer");
  w.line(";; sockets); what they may reach is up to the rules after.");
  w.line(
      "(allow system-socket (socket-domain AF_UNIX) (socket-domain AF_INET) "
      "(socket-domain AF_INET6))");
  if (options.block_raw_sockets) {
    w.line(";; Raw IP sockets (GOOSE_SANDBOX_BLOCK_RAW_SOCKETS).");
    w.line("(deny system-socket (require-all (socket-domain AF_INET) (socket-type SOCK_RAW)))");
    w.line("(deny system-socket (require-all (socket-domain AF_INET6) (socket-type SOCK_RAW)))");
  }
}

// Unix sockets: which the command may connect to, and where it may bind one.
void write_unix_socket_rules(ProfileWriter& w, const ProfileOptions& options) {
  // An allow-list.
  std::vector<std::string> sockets;
  if (!options.gate_unix_socket.empty()) {
    sockets.push_back("(remote unix-socket (path-literal " +
                      w.quote(options.gate_unix_socket, "the gate's socket") + "))");
  }
  if (!options.ssh_auth_sock.empty()) {
    sockets.push_back("(remote unix-socket (path-literal " +
                      w.quote(options.ssh_auth_sock, "SSH_AUTH_SOCK") + "))");
  }
  for (const auto& path : sorted_unique(options.allow_unix_sockets)) {
    sockets.push_back("(remote unix-socket (path-literal " + w.quote(path, "--allow-unix-socket") +
                      "))");
  }
  for (const auto& path : sorted_unique(options.allow_unix_socket_folders)) {
    sockets.push_back("(remote unix-socket (subpath " + w.quote(path, "--allow-unix-socket") +
                      "))");
  }
  w.line(";; Unix sockets: only the gate's, the ssh agent's (SSH_AUTH_SOCK: it signs, it does not");
  w.line(";; connect anywhere) and those listed with --allow-unix-socket. Any other may belong to");
  w.line(";; a program that acts outside the sandbox: container and VM daemons, tmux, screen,");
  w.line(
      ";; terminals' and editors' servers, ssh ControlMaster, gpg's dirmngr. Matched by path at");
  w.line(";; each connect: a socket that appears or is re-created after start is refused as well.");
  w.rule("allow network-outbound", sockets);
  // Binding: only in the run's own folders. A socket bound in a shared place (/private/tmp,
  // $TMPDIR, a repository's .git) can squat the name a program outside connects to later: a
  // tmux server's socket, git's fsmonitor daemon, an editor's IPC.
  std::vector<std::string> bind_in;
  for (const auto& folder : sorted_unique(options.private_folders)) {
    bind_in.push_back("(local unix-socket (subpath " + w.quote(folder, "private folder") + "))");
  }
  if (bind_in.empty()) {
    w.line(";; Serving on a unix socket: nowhere (this run has no private folder to bind in).");
  } else {
    w.line(";; Serving on a unix socket: only in this run's private folders.");
    w.rule("allow network-bind", bind_in);
  }
}

// TCP on localhost: the gate, and the ports the options open.
void write_tcp_rules(ProfileWriter& w, const ProfileOptions& options) {
  // TCP only (no UDP: a DNS server or any other UDP service on localhost would be a way out),
  // only localhost. SBPL names no address but `localhost` and `*`: `localhost` in a remote
  // filter is 127.0.0.1 or ::1, so the gate's rule names its family (tcp4 or tcp6).
  const auto port_rule = [](const char* head, const char* side, const char* kind,
                            const std::string& port) {
    return std::string("(allow ") + head + " (" + side + " " + kind + " \"localhost:" + port +
           "\"))";
  };
  w.line(";; The gate: the only way out, over TCP on the family it listens on.");
  if (options.proxy_port != 0) {
    w.line(port_rule("network-outbound", "remote", options.gate_on_ipv6 ? "tcp6" : "tcp4",
                     std::to_string(options.proxy_port)));
  }
  const auto outbound = sorted_unique(options.allow_localhost_ports);
  if (!outbound.empty()) {
    w.line(";; --allow-localhost-port (TCP)");
    for (auto port : outbound) {
      w.line(port_rule("network-outbound", "remote", "tcp", std::to_string(port)));
    }
  }
  const auto inbound = sorted_unique(options.allow_inbound_ports);
  if (!inbound.empty()) {
    w.line(";; --allow-inbound-port: servers inside the sandbox that local clients may reach,");
    w.line(";; and that the command may reach itself (TCP).");
    for (auto port : inbound) {
      w.line(port_rule("network-bind", "local", "tcp", std::to_string(port)));
      w.line(port_rule("network-inbound", "local", "tcp", std::to_string(port)));
      w.line(port_rule("network-outbound", "remote", "tcp", std::to_string(port)));
    }
  }
  if (options.allow_local_bind) {
    w.line(";; --allow-local-bind: serving on any localhost port and connecting to any (TCP).");
    w.line(";; Seatbelt matches ports, not processes: this reaches every local server, not only");
    w.line(";; the command's own.");
    w.line(port_rule("network-bind", "local", "tcp", "*"));
    w.line(port_rule("network-inbound", "local", "tcp", "*"));
    w.line(port_rule("network-outbound", "remote", "tcp", "*"));
  }
}

void write_network_rules(ProfileWriter& w, const ProfileOptions& options) {
  write_socket_kinds(w, options);
  write_unix_socket_rules(w, options);
  write_tcp_rules(w, options);
}

}  // namespace

std::string case_folded_regex(const std::string& path, bool tree) {
  std::string out = "^";
  for (char c : path) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      const char lower = static_cast<char>(c | 0x20);
      const char upper = static_cast<char>(lower & ~0x20);
      out += '[';
      out += lower;
      out += upper;
      out += ']';
    } else if (std::string_view(".^$*+?()[{|\\").find(c) != std::string_view::npos) {
      // `]` and `}` are ordinary outside a bracket or brace, and those are escaped.
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  out += tree ? "($|/)" : "$";
  return out;
}

std::vector<ProtectedPath> profile_protected_paths(const ProfileOptions& options) {
  std::vector<ProtectedPath> paths = protected_paths(protection_inputs(options));
  const auto add = [&paths](const ProtectedPath& extra) {
    const bool known = std::any_of(paths.begin(), paths.end(), [&](const ProtectedPath& p) {
      return p.path == extra.path || (p.tree && is_within(extra.path, p.path));
    });
    if (!known) {
      paths.push_back(extra);
    }
  };
  if (!options.real_home.empty() && options.real_home != options.home) {
    ProtectionInputs real = protection_inputs(options);
    real.home = options.real_home;
    real.gate_files.clear();
    for (const auto& p : protected_paths(real)) {
      add(p);
    }
  }
  // What editors, shells and agents run or trust in the working and --allow-write folders,
  // unless an --allow-write path is or lies in one: Seatbelt denies a path whether or not it
  // exists, so a missing one cannot be created either (Linux can only bind existing ones).
  if (options.protect_files) {
    std::vector<std::string> folders = {options.working_directory};
    folders.insert(folders.end(), options.allow_writes.begin(), options.allow_writes.end());
    for (const auto& folder : folders) {
      if (folder.empty() || folder == "/" || folder.front() != '/') {
        continue;
      }
      for (const auto& p : auto_run_paths(folder)) {
        const bool named =
            std::any_of(options.allow_writes.begin(), options.allow_writes.end(),
                        [&p](const std::string& given) { return is_within(given, p.path); });
        if (!named) {
          add(p);
        }
      }
    }
  }
  for (const auto& extra : options.resolved_spellings) {
    add(extra);
  }
  // macOS's autostart places, always: below the home, in the real home, and the system's.
  for (const auto& home : {options.home, options.real_home}) {
    for (const auto& place : autostart_places(home)) {
      add(place);
    }
  }
  for (const std::string* socket : {&options.gate_unix_socket, &options.ssh_auth_sock}) {
    if (!socket->empty()) {
      add({*socket, false, true});
    }
  }
  return paths;
}

std::vector<WritableFolder> writable_folders(const ProfileOptions& options) {
  std::vector<WritableFolder> out;
  const auto add = [&out](const std::string& path, const std::string& why) {
    const bool known = std::any_of(out.begin(), out.end(),
                                   [&](const WritableFolder& f) { return f.path == path; });
    if (!path.empty() && path != "/" && !known) {
      out.push_back({path, why});
    }
  };
  add(options.working_directory, "the working folder");
  for (const auto& dir : options.git_dirs) {
    add(dir, "the repository's git folder");
  }
  add(options.temp_dir, "$TMPDIR");
  // Not its sibling C, the per-user cache folder (confstr's _CS_DARWIN_USER_CACHE_DIR): it
  // holds what runs later (xcrun's tool cache, clang's module cache).
  add("/private/tmp", "/tmp, shared with the host");
  add("/private/var/tmp", "/var/tmp, shared with the host");
  for (const auto& cache : options.home_caches) {
    add(cache, "a download cache");
  }
  for (const auto& path : sorted_unique(options.allow_writes)) {
    add(path, "--allow-write");
  }
  return out;
}

ProtectionInputs protection_inputs(const ProfileOptions& options) {
  ProtectionInputs inputs;
  inputs.home = options.home;
  inputs.protect_files = options.protect_files;
  inputs.platform = Platform::macos;
  inputs.gate_files = options.gate_files;
  inputs.working_directory = options.working_directory;
  inputs.git_dirs = options.git_dirs;
  inputs.path_entries = options.path_entries;
  inputs.own_executables = options.own_executables;
  return inputs;
}

Expected<std::string, std::string> generate_profile(const ProfileOptions& options) {
  if (options.proxy_port == 0 && options.gate_unix_socket.empty()) {
    return Unexpected{std::string("the profile needs the gate's port (1..65535) or socket")};
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
  // The home folder is checked first so that its error is the one reported, then the sockets
  // (they appear among the protected paths too, under a vaguer name).
  w.quote(options.home, "home folder");
  if (!options.real_home.empty()) {
    w.quote(options.real_home, "the passwd entry's home folder");
  }
  if (!options.gate_unix_socket.empty()) {
    w.quote(options.gate_unix_socket, "the gate's socket");
  }
  if (!options.ssh_auth_sock.empty()) {
    w.quote(options.ssh_auth_sock, "SSH_AUTH_SOCK");
  }
  const std::string gate = options.proxy_port != 0
                               ? "127.0.0.1:" + std::to_string(options.proxy_port)
                               : std::string("its unix socket");
  w.line(";; sandgate's Seatbelt profile (SBPL), made by `sandgate profile`. Use:");
  w.line(";;   sandbox-exec -p \"$(cat THIS_FILE)\" COMMAND [ARGS...]");
  w.line(";; with the gate listening on " + gate + ". Deny-default: what no rule");
  w.line(";; allows is refused. For one operation, a later rule overrides an earlier one");
  w.line(";; (libsandbox tries the most recent rule first): each deny after an allow narrows it.");
  w.line("(version 1)");
  w.line("(deny default)");
  w.blank();
  write_process_rules(w, options);
  w.blank();
  write_system_rules(w);
  w.blank();
  write_mach_rules(w, options);
  w.blank();
  write_file_rules(w, options);
  w.blank();
  write_network_rules(w, options);
  if (!w.error().empty()) {
    return Unexpected{w.error()};
  }
  return w.take();
}

Expected<std::vector<std::string>, std::string> sandbox_exec_argv(const ProfileOptions& options) {
  auto profile = generate_profile(options);
  if (!profile) {
    return Unexpected{profile.error()};
  }
  return std::vector<std::string>{kSandboxExecPath, "-p", std::move(*profile)};
}

}  // namespace sandgate::sandbox
