// The Linux confinement plan. See confinement_plan.hpp.
#include "sandbox-profile/linux/confinement_plan.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sandbox-profile/linux/landlock.hpp"
#include "sandbox-profile/linux/private_view.hpp"
#include "sandbox-profile/plan/credential_stores.hpp"
#include "sandbox-profile/plan/home_caches.hpp"
#include "sandbox-profile/plan/protected_paths.hpp"
#include "sandbox-profile/plan/unix_sockets.hpp"
#include "sandbox-profile/process/run_support.hpp"

namespace sandgate::sandbox {
namespace {

namespace fs = std::filesystem;

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

// The home's caches as the run sees them (plan/home_caches.hpp): the shared data folders, bound
// read-write, and the folders the run gets afresh (an empty tmpfs each, the shared ones inside
// bound back, the unshared git caches inside shared ones covered). A cache is shared only when
// it is a real folder reached without a symbolic link (a link would grant its target, and one
// planted by an earlier run could lead anywhere); a fresh folder is laid over the folder a link
// leads to, since covering it grants nothing. ~/.cache is made if missing (so its host copy is
// never the command's to write), the unshared folders inside a shared cache too (so none can be
// made there during the run); the rest only when they exist (the home is read-only: a tool whose
// cache is missing fails with EROFS and names it).
struct HomeCaches {
  std::vector<std::string> shared;  // bound read-write: kept for later runs and programs
  std::vector<std::string> fresh;   // the run's own: empty at start, gone at the end
};

bool real_folder(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode) && resolved_path(path) == path;
}

HomeCaches home_caches(const std::string& home) {
  HomeCaches out;
  if (home.empty() || home == "/") {
    return out;
  }
  if (const std::string cache = home + "/.cache"; !exists(cache)) {
    ::mkdir(cache.c_str(), 0700);
  }
  for (const char* name : kRunOnlyHomeCaches) {
    if (const std::string folder = resolved_path(home + name); is_folder(folder)) {
      out.fresh.push_back(folder);
    }
  }
  std::vector<std::string> shared;
  for (const char* name : kHomeCaches) {
    shared.push_back(home + name);
  }
  for (const char* name : kLinuxHomeCaches) {
    shared.push_back(home + name);
  }
  for (const auto& folder : shared) {
    if (!real_folder(folder)) {
      continue;
    }
    // The git caches inside it: made if missing, and only a real folder is covered; a shared
    // cache whose git cache is a link (or cannot be made) is not shared at all.
    bool covered = true;
    for (const char* name : kUnsharedInHomeCaches) {
      const std::string unshared = home + name;
      if (!is_within(unshared, folder)) {
        continue;
      }
      std::error_code ec;
      fs::create_directories(unshared, ec);
      if (real_folder(unshared)) {
        out.fresh.push_back(unshared);
      } else {
        covered = false;
      }
    }
    if (covered) {
      out.shared.push_back(folder);
    }
  }
  return out;
}

// The tmpfs options of the run's fresh caches: ~/.cache an eighth of RAM (build caches live
// there), the others a sixteenth each.
std::vector<std::string> fresh_cache_options(const std::vector<std::string>& fresh,
                                             const std::string& home) {
  struct sysinfo info {};
  unsigned long long ram = 8ULL << 30;
  if (::sysinfo(&info) == 0 && info.totalram > 0) {
    ram = static_cast<unsigned long long>(info.totalram) * info.mem_unit;
  }
  std::vector<std::string> out;
  for (const auto& folder : fresh) {
    const unsigned long long size = folder == home + "/.cache" ? ram / 8 : ram / 16;
    const unsigned long long inodes = std::max(16384ULL, size / 16384);
    out.push_back("size=" + std::to_string(size) + ",nr_inodes=" + std::to_string(inodes));
  }
  return out;
}

// Whether the host's `path` shows inside as far as the home's caches go: true unless the
// innermost of the run's fresh caches and the folders bound back that holds it is a fresh one
// (then what is there on the host is covered, and nothing of it needs protecting or pinning).
bool shown_past_fresh_caches(const std::string& path, const std::vector<std::string>& bound,
                             const std::vector<std::string>& fresh) {
  std::size_t bound_depth = 0;
  std::size_t fresh_depth = 0;
  for (const auto& place : bound) {
    if (is_within(path, place)) {
      bound_depth = std::max(bound_depth, place.size());
    }
  }
  for (const auto& place : fresh) {
    if (is_within(path, place)) {
      fresh_depth = std::max(fresh_depth, place.size());
    }
  }
  return fresh_depth == 0 || bound_depth > fresh_depth;
}

// The folders from the writable place that holds `path` (the innermost of `places`) down to
// `path`'s parent, added to `pinned` (bound onto themselves: a mount point cannot be renamed or
// removed). What is mounted on `path` (a read-only bind, a hidden store's cover, a fresh cache)
// then stays where it is: no folder on its way can be moved aside and replaced by one of the
// command's. Nothing when `path` lies in no place or is one.
void pin_the_way(const std::string& path, const std::vector<std::string>& places,
                 std::vector<std::string>& pinned) {
  const std::string* root = nullptr;
  for (const auto& place : places) {
    if (is_within(path, place) && path != place &&
        (root == nullptr || place.size() > root->size())) {
      root = &place;
    }
  }
  if (root == nullptr) {
    return;
  }
  for (auto folder = fs::path(path).parent_path(); folder.string().size() > root->size();
       folder = folder.parent_path()) {
    if (std::find(pinned.begin(), pinned.end(), folder.string()) == pinned.end()) {
      pinned.push_back(folder.string());
    }
  }
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

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

// The value of `worktree = ...` in a git config file's [core] section ("" if none): where a
// submodule's working folder, and so its gitfile, is.
std::string core_worktree(const std::string& config) {
  std::ifstream in(config);
  std::string line;
  bool core = false;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) {
      continue;
    }
    line = line.substr(first);
    if (line.front() == '[') {
      core = line.rfind("[core]", 0) == 0;
    } else if (core && line.rfind("worktree", 0) == 0) {
      const auto equals = line.find('=');
      if (equals != std::string::npos) {
        const auto value = line.find_first_not_of(" \t", equals + 1);
        return value == std::string::npos ? std::string() : line.substr(value);
      }
    }
  }
  return {};
}

// Submodules' git folders (at any depth: modules/a/modules/b) and linked worktrees': their config
// and hooks run code as the repository's own do, the worktrees' commondir and gitdir redirect git
// wholesale, and the gitfiles that point at them (a submodule's `lib/.git`, a worktree's `.git`)
// would send the user's git to a folder of the command's. All read-only for the run; the
// repository's info/attributes too (it picks the filters git runs).
std::vector<ProtectedPath> nested_git_paths(const std::vector<std::string>& git_dirs) {
  std::vector<ProtectedPath> out;
  std::vector<std::pair<std::string, int>> pending;  // git folder, depth
  for (const auto& dir : git_dirs) {
    out.push_back({dir + "/info/attributes", false, false});
    pending.emplace_back(dir, 0);
  }
  while (!pending.empty() && out.size() < 4096) {
    auto [dir, depth] = pending.back();
    pending.pop_back();
    for (const char* group : {"/modules", "/worktrees"}) {
      std::error_code ignored;
      for (fs::directory_iterator it(dir + group, ignored);
           !ignored && it != fs::directory_iterator(); it.increment(ignored)) {
        const std::string nested = it->path().string();
        for (const char* name :
             {"config", "config.worktree", "hooks", "commondir", "gitdir", "info/attributes"}) {
          out.push_back({nested + "/" + name, false, false});
        }
        // A worktree's gitdir file names its `.git` file; a submodule's core.worktree its
        // working folder, relative to its git folder.
        std::string gitfile;
        if (std::ifstream in(nested + "/gitdir");
            std::getline(in, gitfile) && !gitfile.empty() && gitfile.front() == '/') {
          out.push_back({fs::path(gitfile).lexically_normal().string(), false, false});
        }
        if (std::string worktree = core_worktree(nested + "/config"); !worktree.empty()) {
          out.push_back(
              {(fs::path(nested) / worktree / ".git").lexically_normal().string(), false, false});
        }
        if (depth < 8) {
          pending.emplace_back(nested, depth + 1);
        }
      }
    }
  }
  return out;
}

// "32 inotify instances, 16384 inotify watches": the limits that are not namespaces'.
std::string describe_user_limits(const std::vector<std::pair<std::string, long>>& limits) {
  std::string text;
  for (const auto& [name, value] : limits) {
    if (name.ends_with("_namespaces") || !name.starts_with("max_")) {
      continue;
    }
    std::string what = name.substr(4);
    std::replace(what.begin(), what.end(), '_', ' ');
    text += (text.empty() ? "" : ", ") + std::to_string(value) + " " + what;
  }
  return text.empty() ? std::string("none known") : text;
}

// What runs later from the working folders without being git's own: the hooks folder of
// core.hooksPath and the include.path files wherever they are (husky's `.husky/_`), and what
// tools run or trust in the working folders (.envrc, .vscode/tasks.json, ...), unless an
// --allow-write path is or lies in one. Only those that exist as files or folders reached
// without a link: they are bound read-only. A missing one (or a link) would be Landlock's to
// protect, and its carving forbids every new entry in the folders on the way, the working
// folder's top included; those are judged after the run (git_quarantine.hpp) instead. A hooks
// folder that holds the working folder or a git folder (core.hooksPath=.) is left to that too.
std::vector<ProtectedPath> run_later_paths(const Confinement& confinement,
                                           const std::vector<std::string>& allow_writes) {
  std::vector<ProtectedPath> candidates;
  for (const auto& folder : confinement.git_targets.hook_folders) {
    candidates.push_back({folder, true, false});
  }
  for (const auto& file : confinement.git_targets.included_files) {
    candidates.push_back({file, false, false});
  }
  for (const auto& folder : confinement.scanned) {
    for (auto& p : auto_run_paths(folder)) {
      candidates.push_back(std::move(p));
    }
  }
  std::vector<ProtectedPath> out;
  for (auto& p : candidates) {
    const bool named =
        std::any_of(allow_writes.begin(), allow_writes.end(),
                    [&p](const std::string& given) { return is_within(given, p.path); });
    const bool holds_work =
        is_within(confinement.working_folder, p.path) ||
        std::any_of(confinement.git_dirs.begin(), confinement.git_dirs.end(),
                    [&p](const std::string& dir) { return is_within(dir, p.path); });
    struct stat info {};
    if (named || holds_work || ::lstat(p.path.c_str(), &info) != 0 || S_ISLNK(info.st_mode) ||
        !links_on_the_way(p.path).empty()) {
      continue;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

namespace {

// What the phases of plan_confinement() hand each other besides the Confinement they fill.
struct Places {
  std::vector<std::string> private_folders;  // tmpfs inside: /tmp, /run, ... (that exist)
  std::vector<std::string> allow_writes;     // --allow-write, resolved
  std::vector<std::string> bound;            // bound back read-write after / is made read-only
  HomeCaches caches;                         // the home's caches, shared and fresh
  std::vector<std::string> pinned;           // folders bound onto themselves (none renamed)
};

// What the user is and where the run starts. The error: root without Landlock.
Expected<bool, std::string> plan_identity(Confinement& out) {
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
  return true;
}

// Of the places the command must still reach (`keep`: the home, the working folder,
// --allow-write, the sockets it may reach, sandgate's executables), those that lie in a private
// folder and exist: bound back into it, each once, none that a kept folder brings back whole,
// parents first.
std::vector<std::string> kept_in_private(const std::vector<std::string>& keep,
                                         const std::vector<std::string>& private_folders) {
  std::vector<std::string> kept;
  for (const auto& path : keep) {
    bool covered = false;  // by another kept folder, bound back as a whole
    for (const auto& other : keep) {
      covered = covered || (other != path && is_within(path, other) && is_folder(other));
    }
    if (!covered && within_any(path, private_folders) && exists(path) &&
        std::find(private_folders.begin(), private_folders.end(), path) == private_folders.end() &&
        std::find(kept.begin(), kept.end(), path) == kept.end()) {
      kept.push_back(path);
    }
  }
  // Parents before what lies in them: a bind onto a folder covers binds made below it before.
  std::sort(kept.begin(), kept.end(),
            [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
  return kept;
}

// The private folders (tmpfs inside), what is bound back into them and the sockets hidden.
void plan_private_view(Confinement& out, Places& places, const RunOptions& options,
                       const std::string& home) {
  NamespacePlan& plan = out.plan;
  for (const auto& folder : private_socket_folders(out.runtime_dir)) {
    if (is_folder(folder)) {
      places.private_folders.push_back(folder);
    }
  }
  plan.view.private_roots = places.private_folders;
  if (!out.runtime_dir.empty() && within_any(out.runtime_dir, places.private_folders)) {
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
  for (const auto& path : options.flags.allow_writes) {
    places.allow_writes.push_back(resolved_path(path));
  }
  std::vector<std::string> keep;
  for (const auto& path : {home, out.working_folder}) {
    if (path != "/") {
      keep.push_back(path);
    }
  }
  keep.insert(keep.end(), places.allow_writes.begin(), places.allow_writes.end());
  keep.insert(keep.end(), out.reachable_sockets.begin(), out.reachable_sockets.end());
  // sandgate's own executables: the command's ssh is pointed at sandgate-connect, which must be
  // there inside even when it was run from a folder under /tmp (read-only, as every binding
  // from the read-only root is).
  for (const auto& executable : own_executables()) {
    if (exists(executable)) {
      keep.push_back(executable);
    }
  }
  plan.view.keep = kept_in_private(keep, places.private_folders);
  plan.view.hide = sockets_to_hide_now(allowed, ssh_agent, places.private_folders, home);
}

// What is bound back read-write after / is made read-only: the working folder (unless it is /),
// the enclosing repository's git folders, the home's shared caches, $TMPDIR and --allow-write,
// parents first.
void plan_bound(Confinement& out, Places& places, const std::string& home) {
  const auto add_bound = [&bound = places.bound](const std::string& path) {
    if (!path.empty() && path != "/" && is_folder(path) &&
        std::find(bound.begin(), bound.end(), path) == bound.end()) {
      bound.push_back(path);
    }
  };
  out.git_dirs = enclosing_git_dirs(out.working_folder);
  add_bound(out.working_folder);
  for (const auto& dir : out.git_dirs) {
    add_bound(dir);
  }
  places.caches = home_caches(home);
  // A cache the user gave with --allow-write (or one inside a folder given) is the host's.
  std::erase_if(places.caches.fresh, [&places](const std::string& folder) {
    return within_any(folder, places.allow_writes);
  });
  for (const auto& path : places.caches.shared) {
    add_bound(path);
  }
  if (const std::string tmpdir = env_or_empty("TMPDIR"); !tmpdir.empty()) {
    add_bound(resolved_path(tmpdir));
  }
  for (const auto& path : places.allow_writes) {
    add_bound(path);
  }
  std::sort(places.bound.begin(), places.bound.end(),
            [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
}

// Where unix sockets may be bound: only where the host cannot see them (the private temporary
// and runtime folders, tmpfs inside, less host folders bound back into them) and where the user
// asks (--allow-unix-bind, which must be writable). The error names the flag.
Expected<bool, std::string> plan_socket_binds(Confinement& out, const Places& places,
                                              const RunOptions& options) {
  auto& writes = out.plan.writes;
  for (const auto& folder : writes.writable) {
    if (std::find(places.private_folders.begin(), places.private_folders.end(), folder) !=
        places.private_folders.end()) {
      writes.sockets.push_back(folder);
    }
  }
  writes.not_sockets = out.plan.view.keep;
  for (const auto& path : options.flags.allow_unix_binds) {
    const std::string resolved = resolved_path(path);
    if (!is_folder(resolved) || !within_any(resolved, writes.writable)) {
      return Unexpected{"--allow-unix-bind " + path +
                        ": not a folder the command may write to; give --allow-write " + path +
                        " too (sockets are made where files are)"};
    }
    writes.sockets.push_back(resolved);
  }
  return true;
}

// What the command may write (enforced twice: by the mount namespace, where everything else is
// read-only, and by Landlock): the places bound back, the run's fresh caches, the private
// temporary and runtime folders (tmpfs inside); where it may bind sockets; what is searched
// after the run.
Expected<bool, std::string> plan_writes(Confinement& out, Places& places, const RunOptions& options,
                                        const std::string& home) {
  NamespacePlan& plan = out.plan;
  plan_bound(out, places, home);
  // The unix-socket supervisor reads its callers' memory as a tracer would: under Yama's
  // ptrace_scope 2 or 3 it cannot, and sockets are then only hidden as found at start.
  {
    std::ifstream yama("/proc/sys/kernel/yama/ptrace_scope");
    int scope = 0;
    plan.supervise_unix_sockets = !(yama >> scope) || scope < 2;
  }
  plan.user_limits = sandbox_user_limits();
  plan.view.read_only_root = true;
  plan.view.fresh_devpts = true;
  plan.view.writable = places.bound;
  plan.view.private_options = private_tmpfs_options(plan.view.private_roots, out.runtime_dir);
  plan.view.fresh = places.caches.fresh;
  plan.view.fresh_options = fresh_cache_options(places.caches.fresh, home);
  out.shared_caches = places.caches.shared;
  out.fresh_caches = places.caches.fresh;
  auto& writes = plan.writes;
  writes.writable = places.bound;
  writes.writable.insert(writes.writable.end(), places.caches.fresh.begin(),
                         places.caches.fresh.end());
  for (const char* temp : {"/tmp", "/var/tmp", "/dev/shm"}) {
    writes.writable.emplace_back(temp);
  }
  if (!out.runtime_dir.empty()) {
    writes.writable.push_back(out.runtime_dir);
  }
  out.writable = writes.writable;
  if (auto binds = plan_socket_binds(out, places, options); !binds) {
    return binds;
  }
  // The self-probe binds a socket where the host would see it: the first place bound back
  // read-write (the working folder, a shared cache, ...) that the user did not give for sockets.
  for (const auto& place : places.bound) {
    if (!within_any(place, writes.sockets)) {
      out.probe_no_socket = place;
      break;
    }
  }
  writes.devices = {"/dev/null",    "/dev/zero", "/dev/full", "/dev/random",
                    "/dev/urandom", "/dev/tty",  "/dev/ptmx", "/dev/pts"};
  out.scanned = {out.working_folder};
  for (const auto& path : places.allow_writes) {
    out.scanned.push_back(path);
  }
  return true;
}

// The passwd entry's home, resolved, when it is not `home` ($HOME's): "" otherwise.
std::string other_account_home(const std::string& home) {
  const passwd* account = ::getpwuid(::geteuid());
  if (account == nullptr || account->pw_dir == nullptr || account->pw_dir[0] != '/') {
    return {};
  }
  std::string account_home = resolved_path(account->pw_dir);
  return account_home == home ? std::string() : account_home;
}

// What is carved out of the writable places: the protected paths, for the home in $HOME and the
// passwd entry's (ssh, gpg and login shells find their files through the latter), the gate's
// files, nested git folders, what runs later from the working folders, and each where its links
// lead. Also what the repository's configuration names outside its folders (out.git_targets).
std::vector<ProtectedPath> paths_to_protect(Confinement& out, const Places& places,
                                            const RunOptions& options, const std::string& home) {
  ProtectionInputs inputs;
  inputs.home = home;
  inputs.protect_files = options.sandbox.protect_files;
  inputs.platform = Platform::linux;
  inputs.gate_files = gate_files(options.gate);
  inputs = with_process_inputs(std::move(inputs));
  std::vector<ProtectedPath> protect = protected_paths(inputs);
  if (const std::string account_home = other_account_home(home); !account_home.empty()) {
    ProtectionInputs more = inputs;
    more.home = account_home;
    more.gate_files.clear();
    for (auto& p : protected_paths(more)) {
      protect.push_back(std::move(p));
    }
  }
  // The gate's files as given, so that the symbolic links on their way are protected too (the
  // command must not re-point `cfg` in `proj/cfg/allow.txt` at a folder of its own).
  std::error_code ec;
  for (const std::string& given : options.gate.files) {
    if (!given.empty()) {
      protect.push_back({fs::absolute(given, ec).lexically_normal().string(), false, true});
    }
  }
  for (auto& p : nested_git_paths(out.git_dirs)) {
    protect.push_back(std::move(p));
  }
  out.git_targets = git_config_targets(out.git_dirs, enclosing_worktree(out.working_folder), home);
  if (options.sandbox.protect_files) {
    for (auto& p : run_later_paths(out, places.allow_writes)) {
      protect.push_back(std::move(p));
    }
  }
  // Each protected path also where its links lead (~/.bashrc -> dotfiles/bashrc): what is
  // written through a name is the file it resolves to, so that file is judged by where it is.
  for (std::size_t i = 0, count = protect.size(); i < count; ++i) {
    if (std::string real = resolve_links(protect[i].path); real != protect[i].path) {
      protect.push_back({std::move(real), protect[i].tree, protect[i].always});
    }
  }
  return protect;
}

// Whether protected path `p` needs protecting inside at all. Paths in a private folder are not
// there inside unless bound back, and what is bound back from the read-only root stays
// read-only unless it is one of the writable places: only those need protecting (carving any
// other would take from the private folder, /tmp say, the right to create entries in it). (A
// link's own name is judged here as the link it is; where it leads is judged as the resolved
// spelling added.) Likewise a path in one of the run's fresh caches is not there inside unless
// a shared cache brings it back. A missing file in a git folder (config.worktree, a submodule's
// config): carving it out with Landlock would forbid git's lock files beside it; one created
// during the run is moved aside after it (quarantine_new_git_entries).
bool needs_protecting(const ProtectedPath& p, const Confinement& out, const Places& places) {
  if (within_any(p.path, places.private_folders) &&
      (!within_any(p.path, out.plan.view.keep) || !within_any(p.path, places.bound))) {
    return false;
  }
  if (!shown_past_fresh_caches(p.path, places.bound, places.caches.fresh)) {
    return false;
  }
  return !(within_any(p.path, out.git_dirs) && !exists(p.path));
}

// Carves `protect` out of the writable places: read-only binds where they can be, Landlock
// elsewhere; the self-probe tries to write each.
void carve_protected(Confinement& out, Places& places, const std::vector<ProtectedPath>& protect) {
  NamespacePlan& plan = out.plan;
  for (const auto& p : protect) {
    const fs::path path(p.path);
    // The repository's hooks: created empty if missing, so that they are protected rather than
    // creatable later.
    const std::string git_dir = path.parent_path().string();
    if (std::find(out.git_dirs.begin(), out.git_dirs.end(), git_dir) != out.git_dirs.end() &&
        path.filename() == "hooks" && !exists(p.path) && is_folder(git_dir)) {
      ::mkdir(p.path.c_str(), 0755);
    }
    if (!needs_protecting(p, out, places)) {
      continue;
    }
    out.probe_no_write.push_back(p.path);
    // Inside a writable place, an existing file or folder is bound read-only onto itself (no
    // write, chmod, utimes or xattr: EROFS), and the folders on the way from the place to it are
    // bound onto themselves (a mount point cannot be renamed or removed, so none can be
    // swapped). Landlock is not asked: its carving would forbid new entries beside the path.
    // Missing paths and symbolic links are Landlock's (it denies creating and re-pointing them).
    struct stat info {};
    if (within_any(p.path, places.bound) && ::lstat(p.path.c_str(), &info) == 0 &&
        !S_ISLNK(info.st_mode) && links_on_the_way(p.path).empty()) {
      plan.view.read_only.push_back(p.path);
      pin_the_way(p.path, places.bound, places.pinned);
      continue;
    }
    plan.writes.carved.push_back(p.path);
  }
  // The unshared git caches inside shared ones (Go's VCS cache): their fresh cover stays put.
  for (const auto& folder : places.caches.fresh) {
    pin_the_way(folder, places.bound, places.pinned);
  }
  std::sort(plan.view.read_only.begin(), plan.view.read_only.end(),
            [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
  plan.view.read_only.erase(std::unique(plan.view.read_only.begin(), plan.view.read_only.end()),
                            plan.view.read_only.end());
}

// The credential stores (credential_stores.hpp), less what --allow-read opens, and the
// inspection CA's folder: covered, and each kept where it is.
void hide_stores(Confinement& out, Places& places, const RunOptions& options,
                 const std::string& home) {
  NamespacePlan& plan = out.plan;
  std::vector<std::string> allow_reads;
  for (const auto& path : options.flags.allow_reads) {
    allow_reads.push_back(resolved_path(path));
  }
  std::vector<std::string> homes = {home};
  if (const std::string account_home = other_account_home(home); !account_home.empty()) {
    homes.push_back(account_home);
  }
  CredentialStores stores = credential_stores(homes, current_environment(), allow_reads, false);
  add_gate_secrets(stores, options.gate.secret_files);
  plan.view.secret_folders = stores.folders;
  plan.view.secret_shown = stores.shown;
  plan.view.secret_files = stores.files;
  out.hidden_stores = stores.folders;
  out.hidden_stores.insert(out.hidden_stores.end(), stores.files.begin(), stores.files.end());
  // A hidden file with a second name (a hard link, made by a backup or by an earlier run where
  // the path was writable) is readable by that name: the start-up lines say so.
  for (const auto& file : stores.files) {
    struct stat info {};
    if (::stat(file.c_str(), &info) == 0 && S_ISREG(info.st_mode) && info.st_nlink > 1) {
      out.linked_stores.push_back(file);
    }
  }
  // The inspection CA's folder, wherever it shows inside (under a home or a working folder bound
  // back, say): covered last, as a hidden store is, whatever --allow-read says, so its key cannot
  // be read. Not watched for replacement: the gate itself writes there.
  for (const auto& folder : options.gate.unreadable) {
    if (const std::string resolved = resolved_path(folder); is_folder(resolved)) {
      plan.view.secret_folders.push_back(resolved);
    }
  }
  // A hidden store inside a writable place keeps its cover only if no folder on its way can be
  // renamed (the cover would move with it, and the command would leave its own store at the
  // name the user's tools read later).
  for (const auto& hidden : {plan.view.secret_folders, plan.view.secret_files}) {
    for (const auto& store : hidden) {
      if (exists(store) && shown_past_fresh_caches(store, places.bound, places.caches.fresh)) {
        pin_the_way(store, places.bound, places.pinned);
      }
    }
  }
}

}  // namespace

Expected<Confinement, std::string> plan_confinement(const RunOptions& options,
                                                    const std::string& home) {
  Confinement out;
  Places places;
  if (auto identity = plan_identity(out); !identity) {
    return Unexpected{identity.error()};
  }
  plan_private_view(out, places, options, home);
  if (auto writes = plan_writes(out, places, options, home); !writes) {
    return Unexpected{writes.error()};
  }
  carve_protected(out, places, paths_to_protect(out, places, options, home));
  hide_stores(out, places, options, home);
  // Folders first, then what lies in them: a bind onto a folder would cover a bind below it.
  std::sort(places.pinned.begin(), places.pinned.end(),
            [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
  out.plan.view.pinned = places.pinned;
  // System folders, written by no one inside (root's owner rights included).
  out.probe_no_write.emplace_back("/etc");
  out.probe_no_write.emplace_back("/usr/bin");
  find_host_pty(out);
  return out;
}

namespace {

// Every line of describe_protection(), separated by "\nsandgate run: " as they were once said.
std::string protection_text(const SandboxSettings& sandbox, const Confinement& confinement,
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
    text += sandbox.protect_files
                ? ", shell start-up files, ~/.ssh, ~/.gnupg, autostart, systemd and D-Bus user "
                  "services, git's configuration and hooks (core.hooksPath and included files "
                  "too), the working folder's files that editors and agents run or trust "
                  "(.envrc, .vscode, .idea, .claude, .mcp.json, .husky, ...), and what else runs "
                  "code later; new .git entries are moved aside when the command ends"
                : " only (GOOSE_SANDBOX_PROTECT_FILES=false)";
    if (report.landlock_scoped) {
      text += "; abstract unix sockets and signals scoped to the command";
    }
  } else {
    text += "read-only mounts everywhere but " + join_list(confinement.writable) +
            "; NO Landlock: " + report.landlock_note +
            " (protected paths that are missing can be created)";
  }
  text += "\nsandgate run: caches shared with later runs: " +
          (confinement.shared_caches.empty() ? std::string("none")
                                             : join_list(confinement.shared_caches)) +
          "; the run's own (empty at start, gone at the end): " +
          (confinement.fresh_caches.empty() ? std::string("none")
                                            : join_list(confinement.fresh_caches));
  text += sandbox.capture
              ? "\nsandgate run: capture: every other TCP connection goes to the gate too, DNS "
                "is answered by the gate, all other UDP and ICMP is dropped (--capture=off to "
                "turn it off)"
              : "\nsandgate run: capture off: only tools that honour the proxy variables reach "
                "the gate";
  text += "\nsandgate run: unix sockets: private, empty " +
          join_list(confinement.plan.view.private_roots) + "; reachable: " +
          (confinement.reachable_sockets.empty() ? std::string("none")
                                                 : join_list(confinement.reachable_sockets));
  text += report.landlock_abi > 0
              ? "; bound only in " + join_list(confinement.plan.writes.sockets) +
                    " (--allow-unix-bind PATH adds one)"
              : std::string("; bound wherever the command may write (no Landlock)");
  if (!report.hidden.empty()) {
    text += "\nsandgate run: unix sockets hidden:";
    for (const auto& path : report.hidden) {
      text += " " + path;
    }
  }
  text += "\nsandgate run: credential stores hidden (--allow-read PATH opens one): " +
          (confinement.hidden_stores.empty() ? std::string("none found")
                                             : join_list(confinement.hidden_stores));
  if (!report.frozen.folders.empty()) {
    text +=
        "\nsandgate run: folders frozen around the hidden stores (their names as at start; a "
        "store replaced outside shows nothing inside, and the run goes on): " +
        join_list(report.frozen.folders);
  }
  if (!report.frozen.left.empty()) {
    text += "\nsandgate run: folders with hidden stores left writable (not frozen): " +
            join_list(report.frozen.left) +
            "; a store there replaced outside stops the command (it could read the old or the "
            "new one in that instant)";
  }
  if (!confinement.linked_stores.empty()) {
    text +=
        "\nsandgate run: warning: these hidden credential files have another name (a hard "
        "link) where the command may read them: " +
        join_list(confinement.linked_stores);
  }
  text += pty ? "\nsandgate run: the command has a terminal of its own (relayed), not yours"
              : "\nsandgate run: the command has no controlling terminal";
  text +=
      "\nsandgate run: system calls by allow-list (seccomp) for every process inside; host unix "
      "sockets " +
      std::string(confinement.plan.supervise_unix_sockets
                      ? "refused at connect() unless listed, even ones made later"
                      : "hidden as found at start (Yama's ptrace_scope keeps the supervisor out)") +
      "\nsandgate run: per-user kernel limits inside: a quarter of yours (" +
      describe_user_limits(confinement.plan.user_limits) + "), no namespaces" +
      "\nsandgate run: self-probe passed: no direct connection, no host unix socket, no "
      "protected write, no key upcall, no new namespace, no way into the namespace's init, no "
      "privileged netlink request, no socket bound where the host sees it";
  return text;
}

std::vector<std::string> split_said_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string line = text.substr(start, end - start);
    if (line.starts_with("sandgate run: ")) {
      line.erase(0, std::string_view("sandgate run: ").size());
    }
    if (!line.empty()) {
      lines.push_back(std::move(line));
    }
    start = end + 1;
  }
  return lines;
}

}  // namespace

std::vector<std::string> describe_protection(const SandboxSettings& sandbox,
                                             const Confinement& confinement,
                                             const NamespaceReport& report, std::uint16_t port,
                                             bool pty) {
  return split_said_lines(protection_text(sandbox, confinement, report, port, pty));
}

std::string command_out_of_view(const Confinement& confinement, const std::string& command,
                                const std::string& search_path) {
  if (command.empty()) {
    return {};
  }
  std::string found;
  if (command.find('/') != std::string::npos) {
    found = command.front() == '/' ? command : confinement.working_folder + "/" + command;
  } else {
    std::size_t start = 0;
    while (start <= search_path.size() && found.empty()) {
      const std::size_t end = std::min(search_path.find(':', start), search_path.size());
      const std::string folder = search_path.substr(start, end - start);
      const std::string candidate = (folder.empty() ? "." : folder) + "/" + command;
      if (::access(candidate.c_str(), X_OK) == 0) {
        found = candidate;
      }
      start = end + 1;
    }
  }
  if (found.empty() || !exists(found)) {
    return {};
  }
  const std::string resolved = resolved_path(found);
  std::vector<std::string> bound_back;
  for (const auto& folder : confinement.writable) {
    if (std::find(confinement.plan.view.private_roots.begin(),
                  confinement.plan.view.private_roots.end(),
                  folder) == confinement.plan.view.private_roots.end()) {
      bound_back.push_back(folder);
    }
  }
  for (const auto& root : confinement.plan.view.private_roots) {
    if (within_any(resolved, {root}) && !within_any(resolved, bound_back)) {
      return command + " (" + resolved + ") lies under " + root +
             ", which is private and empty inside `run`: it cannot be found there. Install it "
             "outside " +
             root + " (under your home, say), or start `run` from its folder";
    }
  }
  return {};
}

std::string summarize_protection(const Confinement& confinement, const NamespaceReport& report,
                                 std::uint16_t port) {
  std::string line = "confined: the gate on 127.0.0.1:" + std::to_string(port) +
                     " is the only way out; writes only in " + confinement.working_folder;
  const std::size_t others = confinement.writable.size() > 0 ? confinement.writable.size() - 1 : 0;
  if (others > 0) {
    line += " and " + std::to_string(others) + (others == 1 ? " other place" : " other places");
  }
  if (report.landlock_abi == 0) {
    line += " (NO Landlock: protected paths that are missing can be created)";
  } else {
    line += "; credentials hidden, start-up files and git hooks read-only";
  }
  return line + " (--verbose, or the run's log, has every detail)";
}

std::vector<std::string> describe_ports(const RunOptions& options) {
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
  return split_said_lines(text);
}

}  // namespace sandgate::sandbox
