// `sandgate run`. See run_command.hpp.
//
// The order matters: everything that may fail is checked before CMD starts; fork() happens
// while the process is still single-threaded (the gate's threads start after it); the signals
// that are forwarded, and SIGCHLD, are blocked before fork() so that none is lost, and are
// taken synchronously with sigwaitinfo()/sigwait() in the main thread.
#include "sandbox-profile/run_command.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>

#include "proxy/gate/gate.hpp"
#include "sandbox-profile/child_environment.hpp"
#include "sandbox-profile/fd_passing.hpp"
#include "sandbox-profile/profile.hpp"
#include "sandbox-profile/protected_paths.hpp"

#ifdef __linux__
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <sys/un.h>

#include <algorithm>

#include "sandbox-profile/landlock.hpp"
#include "sandbox-profile/linux_namespaces.hpp"
#include "sandbox-profile/port_forwarder.hpp"
#include "sandbox-profile/pty_relay.hpp"
#include "sandbox-profile/self_probe.hpp"
#include "sandbox-profile/socket_filter.hpp"
#include "sandbox-profile/unix_sockets.hpp"
#endif
#ifdef __APPLE__
#include <mach-o/dyld.h>
#endif

extern char** environ;

namespace sandgate::sandbox {
namespace {

namespace fs = std::filesystem;

#ifdef __linux__
// RLIMIT_NPROC for the command: generous for parallel builds, a stop for a fork bomb.
constexpr rlim_t kProcessLimit = 4096;
#endif

// Signals passed on to CMD. SIGCHLD is taken too, to learn when CMD ends.
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

void say(const std::string& text) { std::cerr << "sandgate run: " << text << std::endl; }

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    out.emplace_back(*entry);
  }
  return out;
}

// The folder of the running executable: sandgate-connect is installed next to it.
std::string executable_folder() {
#ifdef __APPLE__
  std::uint32_t size = 0;
  _NSGetExecutablePath(nullptr, &size);
  std::string path(size, '\0');
  if (_NSGetExecutablePath(path.data(), &size) != 0) {
    return {};
  }
  path.resize(std::strlen(path.c_str()));
  std::error_code ec;
  auto real = fs::canonical(path, ec);
  return ec ? fs::path(path).parent_path().string() : real.parent_path().string();
#else
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : self.parent_path().string();
#endif
}

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// A command line and an environment as execve() wants them, built before fork(): after a fork
// in a process that has threads, the child may only make async-signal-safe calls.
class ExecImage {
 public:
  ExecImage(std::vector<std::string> command, std::vector<std::string> env)
      : command_(std::move(command)), env_(std::move(env)) {
    for (auto& s : command_) {
      argv_.push_back(s.data());
    }
    argv_.push_back(nullptr);
    for (auto& s : env_) {
      envp_.push_back(s.data());
    }
    envp_.push_back(nullptr);
    failure_ = "sandgate run: cannot run '" + command_.front() + "': ";
  }

  // Executes CMD, searching PATH as a shell does. Only returns on failure, having said why, with
  // the status to exit with (127 not found, 126 found but not executable). Async-signal-safe.
  int exec() {
    environ = envp_.data();
    ::execvp(argv_[0], argv_.data());
    const int error = errno;
    const char* reason = std::strerror(error);
    ssize_t ignored = ::write(STDERR_FILENO, failure_.data(), failure_.size());
    ignored = ::write(STDERR_FILENO, reason, std::strlen(reason));
    ignored = ::write(STDERR_FILENO, "\n", 1);
    (void)ignored;
    return error == ENOENT ? 127 : 126;
  }

 private:
  std::vector<std::string> command_;
  std::vector<std::string> env_;
  std::vector<char*> argv_;
  std::vector<char*> envp_;
  std::string failure_;
};

// The signal state `run` changes, kept to give CMD the one `run` was started with.
struct SignalState {
  sigset_t mask;
  struct sigaction pipe;
};

// The signals `run` takes synchronously. SIGCHLD gets a handler that does nothing, so that it
// is never discarded as ignored (its default action) on any system. SIGPIPE is ignored: a client
// that disconnects while the gate writes must cost an error code, not the process.
sigset_t block_signals(SignalState& previous) {
  struct sigaction action {};
  action.sa_handler = [](int) {};
  action.sa_flags = SA_NOCLDSTOP;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGCHLD, &action, nullptr);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGPIPE, &ignore, &previous.pipe);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  for (int signal : kForwarded) {
    sigaddset(&set, signal);
  }
  ::sigprocmask(SIG_BLOCK, &set, &previous.mask);
  return set;
}

// Puts the child's signal state back as the caller of `sandgate run` left it.
// Async-signal-safe.
void restore_signals(const SignalState& previous) {
  ::signal(SIGCHLD, SIG_DFL);
  ::sigaction(SIGPIPE, &previous.pipe, nullptr);
  ::sigprocmask(SIG_SETMASK, &previous.mask, nullptr);
}

int exit_status(int status) {
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return kRunFailed;
}

// Waits for CMD to end, forwarding the signals `run` receives. A signal the terminal sent
// (Ctrl-C, Ctrl-\) went to CMD as well, since both are in its foreground process group: it is
// not sent twice.
int supervise(pid_t child, const sigset_t& set) {
  for (;;) {
    int number = 0;
    bool from_terminal = false;
#ifdef __linux__
    siginfo_t info{};
    number = ::sigwaitinfo(&set, &info);
    if (number < 0) {
      continue;  // EINTR
    }
    from_terminal = info.si_code == SI_KERNEL;
#else
    if (::sigwait(&set, &number) != 0) {
      continue;
    }
    // No siginfo here: a SIGINT or SIGQUIT while we are the terminal's foreground group came
    // from the terminal.
    from_terminal = (number == SIGINT || number == SIGQUIT) && ::isatty(STDIN_FILENO) &&
                    ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
#endif
    if (number == SIGCHLD) {
      int status = 0;
      const pid_t done = ::waitpid(child, &status, WNOHANG);
      if (done == child) {
        return exit_status(status);
      }
      continue;
    }
    if (!from_terminal) {
      ::kill(child, number);
    }
  }
}

// The gate's log and policy, opened before anything forks (`run` logs where `serve` does).
std::unique_ptr<gate::Gate> open_gate(const settings::Settings& settings,
                                      const settings::Sources& sources) {
  auto opened = gate::Gate::open({settings, sources, settings::MissingDefaultBlocklist::create});
  if (!opened) {
    if (!opened.error().logged) {
      say(opened.error().message);
    }
    return nullptr;
  }
  return std::move(*opened);
}

// Serves on `listener` on threads of the gate's own, with live reload of its files and the
// admin endpoint if the settings ask for one. Signals are `run`'s to handle (they go to CMD):
// the gate only stops when CMD has ended.
bool start_gate(gate::Gate& gate, int listener) {
  if (auto error = gate.start(listener)) {
    if (!error->logged) {
      say(error->message);
    }
    return false;
  }
  gate.start_thread();
  return true;
}

std::string connect_helper() {
  const std::string folder = executable_folder();
  const std::string helper = (folder.empty() ? std::string(".") : folder) + "/sandgate-connect";
  if (::access(helper.c_str(), X_OK) != 0) {
    say("warning: " + helper + " is missing: git over SSH (GIT_SSH_COMMAND) will fail");
  }
  return helper;
}

// A gate on the host's loopback, and CMD run with `wrap(port)` in front of it (sandbox-exec on
// macOS; nothing with --no-isolation, when `wrap` is empty).
using Wrapper = std::function<std::optional<std::vector<std::string>>(std::uint16_t port)>;

int run_on_host(const settings::Settings& settings, const settings::Sources& sources,
                const RunOptions& options, const Wrapper& wrap) {
  auto gate = open_gate(settings, sources);
  if (!gate) {
    return kRunFailed;
  }
  auto listener = open_loopback_listener();
  if (!listener) {
    say("cannot listen on 127.0.0.1: " + listener.error());
    return kRunFailed;
  }
  SignalState previous;
  const sigset_t set = block_signals(previous);
  if (!start_gate(*gate, *listener)) {
    return kRunFailed;
  }
  std::vector<std::string> command;
  if (wrap) {
    auto prefix = wrap(gate->port());
    if (!prefix) {
      gate->stop();
      return kRunFailed;
    }
    command = std::move(*prefix);
  }
  command.insert(command.end(), options.command.begin(), options.command.end());
  ExecImage image(std::move(command),
                  child_environment(current_environment(), gate->port(), connect_helper()));

  const pid_t pid = ::fork();
  if (pid < 0) {
    say(std::string("fork: ") + std::strerror(errno));
    gate->stop();
    return kRunFailed;
  }
  if (pid == 0) {
    restore_signals(previous);
    ::_exit(image.exec());
  }
  const int status = supervise(pid, set);
  gate->stop();
  return status;
}

#ifdef __linux__

bool is_folder(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool exists(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

bool within_any(const std::string& path, const std::vector<std::string>& folders) {
  for (const auto& folder : folders) {
    if (is_within(path, folder)) {
      return true;
    }
  }
  return false;
}

// Unix sockets bound to a path outside the private folders (any type, any state), found before
// clone() while /proc/net/unix
// still shows the host's namespace, and the well-known container sockets: every one but the
// allowed ones and the SSH agent is covered with /dev/null.
std::vector<std::string> sockets_to_hide_now(const std::vector<std::string>& allowed,
                                             const std::string& ssh_agent,
                                             const std::vector<std::string>& private_folders,
                                             const std::string& home) {
  MaskInputs inputs;
  inputs.ssh_auth_sock = ssh_agent;
  inputs.allowed = allowed;
  inputs.private_folders = private_folders;
  std::ifstream file("/proc/net/unix");
  std::stringstream text;
  text << file.rdbuf();
  std::vector<std::string> candidates = bound_unix_sockets(text.str());
  for (const auto& path : well_known_container_sockets(home, ::geteuid())) {
    candidates.push_back(path);
  }
  // Per-user VM and container tools keep their sockets in folders of their own.
  for (const char* folder : {"/.colima", "/.lima", "/.docker", "/.rd", "/.orbstack"}) {
    std::error_code ec;
    fs::recursive_directory_iterator it(home + folder,
                                        fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it.depth() > 4) {
        it.disable_recursion_pending();
      }
      if (it->is_socket(ec)) {
        candidates.push_back(it->path().string());
      }
    }
  }
  for (auto& path : candidates) {
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode)) {
      inputs.sockets.push_back(resolved_path(path));
    }
  }
  return sockets_to_hide(inputs);
}

// The home's folders that stay writable: caches that package managers and build tools write on
// every run and that hold nothing the user's shell, editor or git read as configuration. The
// rest of the home is read-only (--allow-write adds more). ~/.cache (the XDG cache: pip, go
// build, ccache, node-gyp, yarn, Bazel, ...) is created if missing; the others only when they
// exist (a tool whose cache is missing then fails with EROFS and names it).
// A poisoned cache entry may still be used by a later build outside the sandbox: the price of
// builds that work.
std::vector<std::string> home_caches(const std::string& home) {
  if (home.empty() || home == "/") {
    return {};
  }
  const std::string cache = home + "/.cache";
  if (!exists(cache)) {
    ::mkdir(cache.c_str(), 0700);
  }
  std::vector<std::string> out;
  for (const char* name :
       {"/.cache", "/.npm", "/.cargo/registry", "/.cargo/git", "/go/pkg/mod", "/.m2/repository",
        "/.gradle/caches", "/.gradle/wrapper", "/.local/share/pnpm"}) {
    const std::string path = home + name;
    // A link (~/.cache -> elsewhere) is followed by the bind: only a real folder is granted.
    struct stat info {};
    if (::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
      out.push_back(path);
    }
  }
  return out;
}

// The size and inode limits of the private tmpfs: /tmp an eighth of RAM, /var/tmp and /dev/shm a
// sixteenth each (a quarter together), /run, /var/run and the runtime folder 64 MiB each (they
// hold sockets and pid files). Without them each tmpfs could fill half of RAM.
std::vector<std::string> private_tmpfs_options(const std::vector<std::string>& roots,
                                               const std::string& runtime_dir) {
  struct sysinfo info {};
  unsigned long long ram = 8ULL << 30;
  if (::sysinfo(&info) == 0 && info.totalram > 0) {
    ram = static_cast<unsigned long long>(info.totalram) * info.mem_unit;
  }
  std::vector<std::string> out;
  for (const auto& root : roots) {
    unsigned long long size = 64ULL << 20;
    if (root == "/tmp") {
      size = ram / 8;
    } else if (root == "/var/tmp" || root == "/dev/shm") {
      size = ram / 16;
    } else if (root != runtime_dir && root != "/run" && root != "/var/run") {
      size = ram / 16;
    }
    const unsigned long long inodes = std::max(16384ULL, size / 16384);
    out.push_back("size=" + std::to_string(size) + ",nr_inodes=" + std::to_string(inodes));
  }
  return out;
}

// Names git itself makes at the top of a git folder. Anything else that appears there during a
// run (commondir, gitdir, config.worktree, a new modules/ or worktrees/) is quarantined.
bool git_makes(const std::string& name) {
  static const char* const kNames[] = {"index",
                                       "HEAD",
                                       "ORIG_HEAD",
                                       "FETCH_HEAD",
                                       "MERGE_HEAD",
                                       "MERGE_MSG",
                                       "MERGE_MODE",
                                       "MERGE_RR",
                                       "AUTO_MERGE",
                                       "CHERRY_PICK_HEAD",
                                       "REVERT_HEAD",
                                       "REBASE_HEAD",
                                       "BISECT_LOG",
                                       "BISECT_START",
                                       "BISECT_TERMS",
                                       "BISECT_EXPECTED_REV",
                                       "BISECT_ANCESTORS_OK",
                                       "BISECT_NAMES",
                                       "BISECT_RUN",
                                       "BISECT_HEAD",
                                       "COMMIT_EDITMSG",
                                       "SQUASH_MSG",
                                       "TAG_EDITMSG",
                                       "NOTES_EDITMSG",
                                       "NOTES_MERGE_PARTIAL",
                                       "NOTES_MERGE_REF",
                                       "packed-refs",
                                       "shallow",
                                       "description",
                                       "gc.pid",
                                       "gc.log",
                                       "objects",
                                       "refs",
                                       "logs",
                                       "info",
                                       "rebase-merge",
                                       "rebase-apply",
                                       "sequencer",
                                       "rr-cache",
                                       "lost-found",
                                       "branches"};
  for (const char* known : kNames) {
    if (name == known) {
      return true;
    }
  }
  return name.ends_with(".lock") || name.starts_with("NOTES_MERGE_");
}

// The `.git` entries below each folder (not following links, not entering git folders), and
// the entries at the top of each git folder. Stops after `limit` entries (a warning then).
struct GitSnapshot {
  std::vector<std::string> dot_gits;
  std::vector<std::string> git_entries;
  bool complete = true;
};

GitSnapshot snapshot_git(const std::vector<std::string>& folders,
                         const std::vector<std::string>& git_dirs) {
  constexpr std::size_t kLimit = 1000000;
  GitSnapshot out;
  std::size_t seen = 0;
  for (const auto& folder : folders) {
    std::error_code ec;
    if (exists(folder + "/.git")) {
      out.dot_gits.push_back(folder + "/.git");
    }
    fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (++seen > kLimit) {
        out.complete = false;
        break;
      }
      if (it->path().filename() == ".git") {
        out.dot_gits.push_back(it->path().string());
        it.disable_recursion_pending();
      } else if (it->is_symlink(ec)) {
        it.disable_recursion_pending();
      }
    }
  }
  for (const auto& dir : git_dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      out.git_entries.push_back(it->path().string());
    }
    for (const char* group : {"/modules", "/worktrees"}) {
      for (fs::directory_iterator it(dir + group, ec); !ec && it != fs::directory_iterator();
           it.increment(ec)) {
        out.git_entries.push_back(it->path().string());
      }
      ec.clear();
    }
  }
  std::sort(out.dot_gits.begin(), out.dot_gits.end());
  std::sort(out.git_entries.begin(), out.git_entries.end());
  return out;
}

// After the command: every `.git` that was not there before (a git folder or a `gitdir:` file
// in a subfolder runs its core.fsmonitor, hooks and aliases at the user's next git command
// there), and every new entry in the repository's git folders that git does not make itself,
// is renamed to NAME.sandgate-quarantine-N and named loudly. Returns what was moved.
std::vector<std::string> quarantine_new_git_entries(const GitSnapshot& before,
                                                    const std::vector<std::string>& folders,
                                                    const std::vector<std::string>& git_dirs) {
  const GitSnapshot after = snapshot_git(folders, git_dirs);
  std::vector<std::string> suspicious;
  for (const auto& path : after.dot_gits) {
    if (!std::binary_search(before.dot_gits.begin(), before.dot_gits.end(), path)) {
      suspicious.push_back(path);
    }
  }
  for (const auto& path : after.git_entries) {
    const fs::path entry(path);
    const bool top =
        std::find(git_dirs.begin(), git_dirs.end(), entry.parent_path().string()) != git_dirs.end();
    if (!std::binary_search(before.git_entries.begin(), before.git_entries.end(), path) &&
        (!top || !git_makes(entry.filename().string()))) {
      suspicious.push_back(path);
    }
  }
  std::vector<std::string> moved;
  for (const auto& path : suspicious) {
    for (int n = 1; n < 1000; ++n) {
      const std::string target = path + ".sandgate-quarantine-" + std::to_string(n);
      if (exists(target)) {
        continue;
      }
      if (::rename(path.c_str(), target.c_str()) == 0) {
        say("WARNING: the command created " + path +
            ", which git would obey the next time it runs there (hooks, core.fsmonitor): moved "
            "to " +
            target + ". Look at it before you use it.");
        moved.push_back(target);
      } else {
        say("WARNING: the command created " + path +
            ", which git would obey, and it could not "
            "be moved aside (" +
            std::strerror(errno) + "): remove it before running git there");
      }
      break;
    }
  }
  return moved;
}

// Everything the confined child needs to know, decided before clone().
struct Confinement {
  NamespacePlan plan;
  std::string working_folder;
  std::string runtime_dir;
  std::vector<std::string> reachable_sockets;  // bound back in
  std::vector<std::string> writable;           // for the start-up message
  std::vector<std::string> probe_no_write;     // what the self-probe tries to write
  std::vector<std::string> git_dirs;           // the enclosing repository's git folders
  std::vector<std::string> scanned;            // searched for new `.git` entries after the run
  std::string host_pty;                        // a host terminal the self-probe tries to open
  unsigned long long host_pty_device = 0;
};

// A host terminal for the self-probe: the user's own if a standard stream is one, else any in
// /dev/pts.
void find_host_pty(Confinement& out) {
  std::string path;
  for (int fd = 0; fd <= 2 && path.empty(); ++fd) {
    char name[128];
    if (::isatty(fd) == 1 && ::ttyname_r(fd, name, sizeof name) == 0 &&
        std::string_view(name).starts_with("/dev/pts/")) {
      path = name;
    }
  }
  std::error_code ec;
  for (fs::directory_iterator it("/dev/pts", ec);
       path.empty() && !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (it->path().filename() != "ptmx") {
      path = it->path().string();
    }
  }
  struct stat info {};
  if (!path.empty() && ::stat(path.c_str(), &info) == 0) {
    out.host_pty = path;
    out.host_pty_device = info.st_dev;
  }
}

// The Linux confinement for `settings` and `options`: the private view, the sockets, the write
// allow-list and what is carved out of it. The error is why `run` must not start.
Expected<Confinement, std::string> plan_confinement(const settings::Settings& settings,
                                                    const RunOptions& options,
                                                    const std::string& home) {
  Confinement out;
  NamespacePlan& plan = out.plan;
  plan.uid = ::geteuid();
  plan.gid = ::getegid();
  if (plan.uid == 0 && landlock_abi() == 0) {
    return Unexpected{std::string(
        "started as root, and this kernel offers no Landlock: the command would keep root's "
        "rights on system files (/etc, /usr, /proc/sys). Run `sandgate run` as an ordinary user, "
        "or on a kernel with Landlock (5.13 or later, enabled in the `lsm=` boot list)")};
  }
  std::error_code ec;
  out.working_folder = resolved_path(fs::current_path(ec).string());
  const std::string runtime = env_or_empty("XDG_RUNTIME_DIR");
  out.runtime_dir = runtime.empty() ? std::string() : resolved_path(runtime);

  // The private folders (tmpfs inside) and what is bound back into them.
  std::vector<std::string> private_folders;
  for (const auto& folder : private_socket_folders(out.runtime_dir)) {
    if (is_folder(folder)) {
      private_folders.push_back(folder);
    }
  }
  plan.view.private_roots = private_folders;
  if (!out.runtime_dir.empty() && within_any(out.runtime_dir, private_folders)) {
    plan.view.runtime_dir = out.runtime_dir;
  }
  std::string ssh_agent = env_or_empty("SSH_AUTH_SOCK");
  ssh_agent = ssh_agent.empty() ? std::string() : resolved_path(ssh_agent);
  std::vector<std::string> allowed;
  for (const auto& path : options.flags.allow_unix_sockets) {
    allowed.push_back(resolved_path(path));
  }
  out.reachable_sockets = allowed;
  if (!ssh_agent.empty() && exists(ssh_agent)) {
    out.reachable_sockets.push_back(ssh_agent);
  }
  std::vector<std::string> allow_writes;
  for (const auto& path : options.flags.allow_writes) {
    allow_writes.push_back(resolved_path(path));
  }
  std::vector<std::string> keep;
  for (const auto& path : {home, out.working_folder}) {
    if (path != "/") {
      keep.push_back(path);
    }
  }
  keep.insert(keep.end(), allow_writes.begin(), allow_writes.end());
  keep.insert(keep.end(), out.reachable_sockets.begin(), out.reachable_sockets.end());
  for (const auto& path : keep) {
    bool covered = false;  // by another kept folder, bound back as a whole
    for (const auto& other : keep) {
      covered = covered || (other != path && is_within(path, other) && is_folder(other));
    }
    if (!covered && within_any(path, private_folders) && exists(path) &&
        std::find(private_folders.begin(), private_folders.end(), path) == private_folders.end() &&
        std::find(plan.view.keep.begin(), plan.view.keep.end(), path) == plan.view.keep.end()) {
      plan.view.keep.push_back(path);
    }
  }
  // Parents before what lies in them: a bind onto a folder covers binds made below it before.
  std::sort(plan.view.keep.begin(), plan.view.keep.end(),
            [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
  plan.view.hide = sockets_to_hide_now(allowed, ssh_agent, private_folders, home);

  // What the command may write (enforced twice: by the mount namespace, where everything else
  // is read-only, and by Landlock): the working folder (unless it is /), the enclosing
  // repository's git folders, the home's caches, $TMPDIR, what the user added, and the private
  // temporary and runtime folders (tmpfs inside).
  const std::vector<std::string> git_dirs = enclosing_git_dirs(out.working_folder);
  std::vector<std::string> bound;  // bound back read-write after / is made read-only
  const auto add_bound = [&bound](const std::string& path) {
    if (!path.empty() && path != "/" && is_folder(path) &&
        std::find(bound.begin(), bound.end(), path) == bound.end()) {
      bound.push_back(path);
    }
  };
  add_bound(out.working_folder);
  for (const auto& dir : git_dirs) {
    add_bound(dir);
  }
  for (const auto& path : home_caches(home)) {
    add_bound(path);
  }
  if (const std::string tmpdir = env_or_empty("TMPDIR"); !tmpdir.empty()) {
    add_bound(resolved_path(tmpdir));
  }
  for (const auto& path : allow_writes) {
    add_bound(path);
  }
  std::sort(bound.begin(), bound.end(),
            [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
  plan.view.read_only_root = true;
  plan.view.fresh_devpts = true;
  plan.view.writable = bound;
  plan.view.private_options = private_tmpfs_options(plan.view.private_roots, out.runtime_dir);
  auto& writes = plan.writes;
  writes.writable = bound;
  for (const char* temp : {"/tmp", "/var/tmp", "/dev/shm"}) {
    writes.writable.emplace_back(temp);
  }
  if (!out.runtime_dir.empty()) {
    writes.writable.push_back(out.runtime_dir);
  }
  out.writable = writes.writable;
  writes.devices = {"/dev/null",    "/dev/zero", "/dev/full", "/dev/random",
                    "/dev/urandom", "/dev/tty",  "/dev/ptmx", "/dev/pts"};
  out.git_dirs = git_dirs;
  out.scanned = {out.working_folder};
  for (const auto& path : allow_writes) {
    out.scanned.push_back(path);
  }

  // What is carved out of it: the protected paths, for the home in $HOME and the passwd entry's
  // (ssh, gpg and login shells find their files through the latter).
  ProtectionInputs inputs;
  inputs.home = home;
  inputs.protect_files = settings.protect_files;
  inputs.platform = Platform::linux;
  inputs.gate_files = gate_files(settings);
  inputs = with_process_inputs(std::move(inputs));
  std::vector<ProtectedPath> protect = protected_paths(inputs);
  if (const passwd* account = ::getpwuid(::geteuid());
      account != nullptr && account->pw_dir != nullptr && account->pw_dir[0] == '/') {
    const std::string account_home = resolved_path(account->pw_dir);
    if (account_home != home) {
      ProtectionInputs more = inputs;
      more.home = account_home;
      more.gate_files.clear();
      for (auto& p : protected_paths(more)) {
        protect.push_back(std::move(p));
      }
    }
  }
  // The gate's files as given, so that the symbolic links on their way are protected too (the
  // command must not re-point `cfg` in `proj/cfg/allow.txt` at a folder of its own).
  for (const std::string* given : {&settings.blocklist_path, &settings.allowlist_path,
                                   &settings.config_path, &settings.log_file}) {
    if (!given->empty()) {
      protect.push_back({fs::absolute(*given, ec).lexically_normal().string(), false, true});
    }
  }
  // Submodules' and linked worktrees' git folders: their config and hooks run code as the
  // repository's own do (the worktrees' commondir and gitdir redirect git wholesale).
  for (const auto& dir : git_dirs) {
    for (const char* group : {"/modules", "/worktrees"}) {
      std::error_code ignored;
      for (fs::directory_iterator it(dir + group, ignored);
           !ignored && it != fs::directory_iterator(); it.increment(ignored)) {
        for (const char* name : {"config", "config.worktree", "hooks", "commondir", "gitdir"}) {
          protect.push_back({it->path().string() + "/" + name, false, false});
        }
      }
    }
  }
  std::vector<std::string> kept_inside = plan.view.keep;
  std::vector<std::string> pinned;
  for (const auto& p : protect) {
    const fs::path path(p.path);
    // The repository's hooks: created empty if missing, so that they are protected rather than
    // creatable later.
    const std::string git_dir = path.parent_path().string();
    if (std::find(git_dirs.begin(), git_dirs.end(), git_dir) != git_dirs.end() &&
        path.filename() == "hooks" && !exists(p.path) && is_folder(git_dir)) {
      ::mkdir(p.path.c_str(), 0755);
    }
    // Paths in a private folder are not there inside, unless bound back.
    if (within_any(p.path, private_folders) && !within_any(p.path, kept_inside)) {
      continue;
    }
    // A missing file in a git folder (config.worktree, a submodule's config): carving it out
    // with Landlock would forbid git's lock files beside it; one created during the run is
    // moved aside after it (quarantine_new_git_entries).
    if (within_any(p.path, git_dirs) && !exists(p.path)) {
      continue;
    }
    out.probe_no_write.push_back(p.path);
    // Inside a writable place, an existing file or folder is bound read-only onto itself (no
    // write, chmod, utimes or xattr: EROFS), and the folders on the way from the place to it are
    // bound onto themselves (a mount point cannot be renamed or removed, so none can be
    // swapped). Landlock is not asked: its carving would forbid new entries beside the path.
    // Missing paths and symbolic links are Landlock's (it denies creating and re-pointing them).
    struct stat info {};
    const std::string* root = nullptr;
    for (const auto& place : bound) {
      if (is_within(p.path, place) && p.path != place &&
          (root == nullptr || place.size() > root->size())) {
        root = &place;
      }
    }
    if (root != nullptr && ::lstat(p.path.c_str(), &info) == 0 && !S_ISLNK(info.st_mode) &&
        links_on_the_way(p.path).empty()) {
      plan.view.read_only.push_back(p.path);
      for (auto folder = path.parent_path(); folder.string().size() > root->size();
           folder = folder.parent_path()) {
        if (std::find(pinned.begin(), pinned.end(), folder.string()) == pinned.end()) {
          pinned.push_back(folder.string());
        }
      }
      continue;
    }
    writes.carved.push_back(p.path);
  }
  // Folders first, then what lies in them: a bind onto a folder would cover a bind below it.
  std::sort(pinned.begin(), pinned.end(),
            [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
  plan.view.pinned = pinned;
  std::sort(plan.view.read_only.begin(), plan.view.read_only.end(),
            [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
  plan.view.read_only.erase(std::unique(plan.view.read_only.begin(), plan.view.read_only.end()),
                            plan.view.read_only.end());
  // System folders, written by no one inside (root's owner rights included).
  out.probe_no_write.emplace_back("/etc");
  out.probe_no_write.emplace_back("/usr/bin");
  find_host_pty(out);
  return out;
}

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

std::string describe_protection(const settings::Settings& settings, const Confinement& confinement,
                                const NamespaceReport& report, std::uint16_t port, bool pty) {
  std::string text =
      "confined: user, network, mount, pid and IPC namespaces with loopback only, a new session "
      "keyring; the gate on 127.0.0.1:" +
      std::to_string(port) + " is the only way out\n";
  text += "sandgate run: ";
  if (report.landlock_abi > 0) {
    text += "read-only mounts everywhere but " + join_list(confinement.writable) +
            "; writes allowed by Landlock (ABI " + std::to_string(report.landlock_abi) +
            ") only there; " + std::to_string(report.landlock_paths) +
            " protected paths read-only: the gate's files";
    text += settings.protect_files
                ? ", shell start-up files, ~/.ssh, ~/.gnupg, autostart, systemd and D-Bus user "
                  "services, git's configuration and hooks, and what else runs code later; new "
                  ".git entries are moved aside when the command ends"
                : " only (GOOSE_SANDBOX_PROTECT_FILES=false)";
    if (report.landlock_scoped) {
      text += "; abstract unix sockets and signals scoped to the command";
    }
  } else {
    text += "read-only mounts everywhere but " + join_list(confinement.writable) +
            "; NO Landlock: " + report.landlock_note +
            " (protected paths that are missing can be created)";
  }
  text += "\nsandgate run: unix sockets: private, empty " +
          join_list(confinement.plan.view.private_roots) + "; reachable: " +
          (confinement.reachable_sockets.empty() ? std::string("none")
                                                 : join_list(confinement.reachable_sockets));
  if (!report.hidden.empty()) {
    text += "\nsandgate run: unix sockets hidden:";
    for (const auto& path : report.hidden) {
      text += " " + path;
    }
  }
  text += pty ? "\nsandgate run: the command has a terminal of its own (relayed), not yours"
              : "\nsandgate run: the command has no controlling terminal";
  text +=
      "\nsandgate run: self-probe passed: no direct connection, no host unix socket, no "
      "protected write";
  return text;
}

// Forks the connector for inbound ports (see port_forwarder.hpp) from the confined child, inside
// its namespaces, so that it belongs to no one: a double fork leaves it to the namespace's init,
// and it lives exactly as long as the channel to the gate. Returns the gate's end, or -1.
int start_connector() {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    return -1;
  }
  const pid_t middle = ::fork();
  if (middle == 0) {
    if (::fork() == 0) {
      // Keep only the channel (as descriptor 3) and the standard streams.
      ::dup2(pair[1], 3);
      ::close_range(4, ~0U, 0);
      ::fcntl(3, F_SETFD, FD_CLOEXEC);
      drop_privileges();
      run_connector(3);
    }
    ::_exit(0);
  }
  ::close(pair[1]);
  ::waitpid(middle, nullptr, 0);
  return pair[0];
}

// The start-up line for the forwarded ports; empty without any.
std::string describe_ports(const RunOptions& options) {
  std::string text;
  const auto list = [](const std::vector<std::uint16_t>& ports) {
    std::string out;
    for (auto port : ports) {
      out += (out.empty() ? "" : ", ") + std::to_string(port);
    }
    return out;
  };
  if (!options.flags.allow_localhost_ports.empty()) {
    text += "\nsandgate run: forwarded to the host's localhost: " +
            list(options.flags.allow_localhost_ports);
  }
  if (!options.flags.allow_inbound_ports.empty()) {
    text += "\nsandgate run: the host's localhost forwarded in to: " +
            list(options.flags.allow_inbound_ports);
  }
  return text;
}

// Runs the self-probe in a process confined exactly as the command will be; returns what
// escaped, one line each (empty: the fence held).
std::string run_probe(ProbeTargets targets) {
  int pipe[2];
  if (::pipe2(pipe, O_CLOEXEC) != 0) {
    return "the self-probe could not start (pipe)";
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe[0]);
    std::string text;
    for (const auto& escape : probe_fence(targets)) {
      text += escape + "\n";
    }
    ssize_t ignored = ::write(pipe[1], text.data(), text.size());
    (void)ignored;
    ::_exit(0);
  }
  ::close(pipe[1]);
  std::string text;
  char buffer[4096];
  ssize_t got = 0;
  while ((got = ::read(pipe[0], buffer, sizeof buffer)) > 0 || (got < 0 && errno == EINTR)) {
    text.append(buffer, static_cast<std::size_t>(got > 0 ? got : 0));
  }
  ::close(pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return "the self-probe did not finish";
  }
  return text;
}

// The namespace's init after "go": CMD runs as its child; signals from `run` are passed on, every
// orphan is reaped, and when CMD ends init exits with CMD's status (the kernel then ends every
// process left in the namespace).
[[noreturn]] void init_supervise(pid_t command, const sigset_t& set) {
  for (;;) {
    siginfo_t info{};
    const int number = ::sigwaitinfo(&set, &info);
    if (number < 0) {
      continue;  // EINTR
    }
    if (number != SIGCHLD) {
      ::kill(command, number);
      continue;
    }
    int status = 0;
    pid_t done = 0;
    while ((done = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (done == command) {
        ::_exit(exit_status(status));
      }
    }
  }
}

// The child, pid 1 of its namespaces: confine, hand the listeners over, pass the self-probe,
// wait for the gate, then run CMD in a session of its own and supervise it.
[[noreturn]] void confined_init(int channel, const Confinement& confinement,
                                const RunOptions& options, const std::string& helper,
                                const SignalState& previous, const sigset_t& set,
                                unsigned tty_streams) {
  const NamespacePlan& plan = confinement.plan;
  // Out of the user's terminal's session: a signal it sends reaches `run`, which passes it on.
  ::setsid();
  // If sandgate dies, so does everything here: it would have no way out anyway.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  NamespaceReport report;
  auto listener = enter_namespaces(plan, report);
  if (!listener) {
    send_message(channel, "error " + listener.error());
    ::_exit(kRunFailed);
  }
  // The working folder, looked up again through the view's mounts (the folder inherited from
  // the parent is the one below them).
  if (!confinement.working_folder.empty()) {
    if (::chdir(confinement.working_folder.c_str()) != 0) {
      ::chdir("/");
    }
  }
  sockaddr_in address{};
  socklen_t length = sizeof address;
  ::getsockname(*listener, reinterpret_cast<sockaddr*>(&address), &length);
  const std::uint16_t port = ntohs(address.sin_port);
  // --allow-localhost-port N: a listener on this namespace's 127.0.0.1:N for the gate to relay
  // to the host's; --allow-inbound-port: the connector.
  std::vector<std::pair<std::uint16_t, int>> outbound;
  for (auto forwarded : options.flags.allow_localhost_ports) {
    auto opened = open_loopback_listener(forwarded);
    if (!opened) {
      send_message(channel, "error --allow-localhost-port " + std::to_string(forwarded) + ": " +
                                opened.error());
      ::_exit(kRunFailed);
    }
    outbound.emplace_back(forwarded, *opened);
  }
  const int connector = options.flags.allow_inbound_ports.empty() ? -1 : start_connector();
  if (!options.flags.allow_inbound_ports.empty() && connector < 0) {
    send_message(channel, "error cannot start the connector for --allow-inbound-port");
    ::_exit(kRunFailed);
  }
  // The command's terminal, from this namespace's own devpts instance: its master goes to `run`.
  int tty_slave = -1;
  int tty_master = -1;
  if (tty_streams != 0) {
    auto pair = PtyRelay::open_pair();
    if (!pair) {
      send_message(channel, "error the command's terminal: " + pair.error());
      ::_exit(kRunFailed);
    }
    std::tie(tty_master, tty_slave) = *pair;
  }
  if (auto landlock = apply_landlock(plan, report); !landlock) {
    send_message(channel, "error " + landlock.error());
    ::_exit(kRunFailed);
  }
  if (auto keyring = join_fresh_keyring(); !keyring) {
    send_message(channel, "error " + keyring.error());
    ::_exit(kRunFailed);
  }
  if (auto dropped = drop_privileges(); !dropped) {
    send_message(channel, "error " + dropped.error());
    ::_exit(kRunFailed);
  }
  bool sent = static_cast<bool>(send_message(channel, "ready\n" + report.serialize(), *listener));
  if (tty_master >= 0) {
    sent = sent && send_message(channel, "pty", tty_master);
    ::close(tty_master);
  }
  for (const auto& [forwarded, fd] : outbound) {
    sent = sent && send_message(channel, "outbound " + std::to_string(forwarded), fd);
    ::close(fd);
  }
  if (connector >= 0) {
    sent = sent && send_message(channel, "connector", connector);
    ::close(connector);
  }
  if (!sent) {
    ::_exit(kRunFailed);
  }
  ::close(*listener);
  // The self-probe, with the host socket `run` made after all of the above.
  auto probe = receive_message(channel);
  if (!probe || !probe->text.starts_with("probe")) {
    ::_exit(kRunFailed);  // the gate did not start; the parent has said why
  }
  ProbeTargets targets;
  targets.host_socket = probe->text.size() > 6 ? probe->text.substr(6) : std::string();
  targets.no_write = confinement.probe_no_write;
  targets.host_pty = confinement.host_pty;
  targets.host_pty_device = confinement.host_pty_device;
  const std::string escaped = run_probe(targets);
  if (!send_message(channel, escaped.empty() ? "probe-ok" : "probe-failed\n" + escaped)) {
    ::_exit(kRunFailed);
  }
  auto go = receive_message(channel);
  if (!go || go->text != "go") {
    ::_exit(kRunFailed);
  }
  ::close(channel);
  ExecImage image(options.command, child_environment(current_environment(), port, helper));
  const pid_t command = ::fork();
  if (command < 0) {
    ::_exit(kRunFailed);
  }
  if (command == 0) {
    // A session of its own: no controlling terminal but the relayed one, if any.
    ::setsid();
    if (tty_slave >= 0) {
      ::ioctl(tty_slave, TIOCSCTTY, 0);
      for (int fd = 0; fd <= 2; ++fd) {
        if ((tty_streams & (1U << fd)) != 0) {
          ::dup2(tty_slave, fd);
        }
      }
    }
    // Nothing inherited but the standard streams: a descriptor the invoker left open (a socket
    // of the host's network namespace, say) would be a way around the fence.
    ::close_range(3, ~0U, 0);
    // A process limit: a fork bomb ends at it (uid 0 is exempt in the kernel's check).
    const rlimit processes{kProcessLimit, kProcessLimit};
    ::setrlimit(RLIMIT_NPROC, &processes);
    // Last: socket families other than unix, IP and netlink fail (AF_VSOCK is not fenced by the
    // network namespace).
    if (auto filtered = deny_other_socket_families(); !filtered) {
      const std::string text = "sandgate run: seccomp: " + filtered.error() + "\n";
      ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
      (void)ignored;
      ::_exit(kRunFailed);
    }
    restore_signals(previous);
    ::_exit(image.exec());
  }
  if (tty_slave >= 0) {
    ::close(tty_slave);
  }
  init_supervise(command, set);
}

// Waits for the namespace's init to end, passing on every signal `run` receives (init and CMD
// are in sessions of their own: nothing the terminal sends reaches them directly) and the
// window size of the user's terminal.
int supervise_confined(pid_t child, const sigset_t& set, PtyRelay* pty) {
  for (;;) {
    siginfo_t info{};
    const int number = ::sigwaitinfo(&set, &info);
    if (number < 0) {
      continue;  // EINTR
    }
    if (number == SIGWINCH) {
      if (pty != nullptr) {
        pty->resize();
      }
      continue;
    }
    if (number == SIGCHLD) {
      int status = 0;
      if (::waitpid(child, &status, WNOHANG) == child) {
        return exit_status(status);
      }
      continue;
    }
    ::kill(child, number);
  }
}

// A listening unix socket in the host's runtime folder (or /tmp), made after the confinement
// is built: the self-probe must not reach it. Returns its descriptor and path, or -1.
std::pair<int, std::string> probe_socket(const std::string& runtime_dir) {
  const std::string folder = !runtime_dir.empty() && is_folder(runtime_dir) ? runtime_dir : "/tmp";
  const std::string path = folder + "/sandgate-probe-" + std::to_string(::getpid()) + ".sock";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    return {-1, ""};
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ::unlink(path.c_str());
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 1) != 0) {
    if (fd >= 0) {
      ::close(fd);
    }
    return {-1, ""};
  }
  ::chmod(path.c_str(), 0666);
  return {fd, path};
}

int run_isolated(const settings::Settings& settings, const settings::Sources& sources,
                 const RunOptions& options) {
  const std::string home = resolved_path(settings::home_directory());
  auto confinement = plan_confinement(settings, options, home);
  if (!confinement) {
    say(confinement.error());
    return kRunFailed;
  }
  const std::string helper = connect_helper();
  auto gate = open_gate(settings, sources);
  if (!gate) {
    return kRunFailed;
  }
  std::unique_ptr<PtyRelay> pty;
  if (PtyRelay::wanted()) {
    auto prepared = PtyRelay::prepare();
    if (!prepared) {
      say("cannot relay the terminal: " + prepared.error());
      return kRunFailed;
    }
    pty = std::move(*prepared);
  }
  // The `.git` entries and git folder entries before the command runs: new ones are moved aside
  // after it.
  const GitSnapshot git_before = snapshot_git(confinement->scanned, confinement->git_dirs);
  if (!git_before.complete) {
    say("warning: too many files to check for new .git entries after the run; only the first "
        "million are checked");
  }

  int channel[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) != 0) {
    say(std::string("socketpair: ") + std::strerror(errno));
    return kRunFailed;
  }
  SignalState previous;
  sigset_t set = block_signals(previous);
  sigset_t winch;
  sigemptyset(&winch);
  sigaddset(&winch, SIGWINCH);
  ::sigprocmask(SIG_BLOCK, &winch, nullptr);
  const sigset_t init_set = set;  // init does not take SIGWINCH: the pty sends it to CMD
  sigaddset(&set, SIGWINCH);
  auto cloned = clone_confined();
  if (!cloned) {
    say(cloned.error());
    return kRunFailed;
  }
  const pid_t pid = *cloned;
  if (pid == 0) {
    ::close(channel[0]);
    confined_init(channel[1], *confinement, options, helper, previous, init_set,
                  pty ? pty->terminal_streams() : 0);
  }
  ::close(channel[1]);
  const int to_child = channel[0];
  // Ends the child (it waits for the next message and exits when the channel closes) and
  // reaps it.
  const auto abandon = [&]() {
    ::close(to_child);
    ::waitpid(pid, nullptr, 0);
    return kRunFailed;
  };

  auto message = receive_message(to_child);
  if (!message || message->closed) {
    say("the confined process ended before it was ready");
    return abandon();
  }
  if (message->text.starts_with("error ")) {
    say(message->text.substr(6));
    return abandon();
  }
  if (message->fd < 0) {
    say("the confined process sent no listening socket");
    return abandon();
  }
  const NamespaceReport report = NamespaceReport::parse(message->text);
  const int listener_fd = message->fd;
  if (pty) {
    auto sent = receive_message(to_child);
    if (!sent || sent->fd < 0 || sent->text != "pty") {
      ::close(listener_fd);
      say("the confined process sent no terminal");
      return abandon();
    }
    pty->adopt(sent->fd);
  }
  if (!start_gate(*gate, listener_fd)) {
    return abandon();
  }
  // The forwarded localhost ports, as the child sent them.
  PortForwarder forwarder;
  const auto give_up = [&]() {
    forwarder.stop();
    gate->stop();
    return abandon();
  };
  for (auto forwarded : options.flags.allow_localhost_ports) {
    auto sent = receive_message(to_child);
    if (!sent || sent->fd < 0 || sent->text != "outbound " + std::to_string(forwarded)) {
      say("the confined process sent no listener for --allow-localhost-port " +
          std::to_string(forwarded));
      return give_up();
    }
    forwarder.forward_outbound(sent->fd, forwarded);
  }
  if (!options.flags.allow_inbound_ports.empty()) {
    auto sent = receive_message(to_child);
    if (!sent || sent->fd < 0 || sent->text != "connector") {
      say("the confined process sent no connector for --allow-inbound-port");
      return give_up();
    }
    for (auto forwarded : options.flags.allow_inbound_ports) {
      if (auto listening = forwarder.forward_inbound(forwarded, sent->fd); !listening) {
        say(listening.error());
        return give_up();
      }
    }
  }
  // The self-probe, against a host socket made now, after the confinement (as a daemon's
  // restart would make one).
  auto [probe_fd, probe_path] = probe_socket(confinement->runtime_dir);
  const bool asked = static_cast<bool>(send_message(to_child, "probe " + probe_path));
  auto verdict = asked ? receive_message(to_child)
                       : Expected<Message, std::string>(Unexpected{std::string("not asked")});
  if (probe_fd >= 0) {
    ::close(probe_fd);
    ::unlink(probe_path.c_str());
  }
  if (!verdict || verdict->closed) {
    say("the confined process ended during the self-probe");
    return give_up();
  }
  if (verdict->text != "probe-ok") {
    const auto newline = verdict->text.find('\n');
    std::string escapes = newline == std::string::npos ? "" : verdict->text.substr(newline + 1);
    while (!escapes.empty() && escapes.back() == '\n') {
      escapes.pop_back();
    }
    for (auto& c : escapes) {
      c = c == '\n' ? ';' : c;
    }
    say("refusing to start the command: the self-probe got out of the confinement: " + escapes);
    return give_up();
  }
  say(describe_protection(settings, *confinement, report, gate->port(), pty != nullptr) +
      describe_ports(options));
  if (pty) {
    pty->start();
  }
  if (!send_message(to_child, "go")) {
    if (pty) {
      pty->finish();
    }
    return give_up();
  }
  ::close(to_child);
  const int status = supervise_confined(pid, set, pty.get());
  if (pty) {
    pty->finish();
  }
  forwarder.stop();
  gate->stop();
  quarantine_new_git_entries(git_before, confinement->scanned, confinement->git_dirs);
  return status;
}

#endif  // __linux__

#ifdef __APPLE__
constexpr const char* kSandboxExec = kSandboxExecPath;
#endif

}  // namespace

int run_run(const settings::Settings& settings, const settings::Sources& sources,
            const RunOptions& options) {
  if (options.command.empty()) {
    say("no command given: sandgate run [SETTINGS] -- CMD [ARGS...]");
    return kRunFailed;
  }
  if (options.no_isolation) {
    say("WARNING: --no-isolation: the command is NOT confined. Only the proxy variables point it "
        "at the gate; anything that ignores them (curl --noproxy, raw sockets, most non-HTTP "
        "clients) reaches the network directly.");
    return run_on_host(settings, sources, options, {});
  }
#ifdef __linux__
  return run_isolated(settings, sources, options);
#elif defined(__APPLE__)
  // Never run unconfined by accident: check before anything starts.
  if (::access(kSandboxExec, X_OK) != 0) {
    say(std::string("sandbox-exec is not available (") + kSandboxExec +
        " is missing): not starting the command unconfined; --no-isolation runs it with the "
        "proxy variables only");
    return kRunFailed;
  }
  // The profile goes to sandbox-exec inline (-p), never through a file a leftover process could
  // rewrite before sandbox-exec reads it.
  return run_on_host(
      settings, sources, options,
      [&](std::uint16_t port) -> std::optional<std::vector<std::string>> {
        auto argv = sandbox_exec_argv(profile_options(settings, options.flags, port,
                                                      settings::home_directory(),
                                                      env_or_empty("SSH_AUTH_SOCK")));
        if (!argv) {
          say(argv.error());
          return std::nullopt;
        }
        say("confined by sandbox-exec (`sandgate profile` prints the profile); the gate on "
            "127.0.0.1:" +
            std::to_string(port) + " is the only way out");
        return *argv;
      });
#else
  say("confinement is implemented for Linux and macOS only; --no-isolation runs the command "
      "with the proxy variables only");
  return kRunFailed;
#endif
}

}  // namespace sandgate::sandbox
