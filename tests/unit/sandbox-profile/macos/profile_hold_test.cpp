// The macOS profile against issue 41's findings, decided by the SBPL evaluator (the last matching
// rule wins, as in libsandbox): the user's terminal cannot be ioctl'd (TIOCSTI), only named
// sysctls are readable (no KERN_PROCARGS2), the folders above hidden and protected paths cannot
// be renamed, credential denies are case-folded, git folders are read-only but for what a commit
// writes, unix sockets are bound only in the run's private folders, caches are only known tools'
// data folders, trustd is off unless asked, loopback means TCP to localhost, common macOS secrets
// are unreadable, autostart places are never writable; and, for every protected or hidden path
// in every mode (default, home, --allow-write, worktree), the deny wins over every allow; no
// set-user-ID helper (sudo with a live ticket) runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <vector>

#include "sandbox-profile/macos/macos_places.hpp"
#include "sandbox-profile/macos/profile.hpp"
#include "sandbox-profile/plan/protected_paths.hpp"
#include "tests/unit/sandbox-profile/macos/sbpl_reader.hpp"

namespace sandgate::sandbox {
namespace {

using testing::Request;
using testing::Sexp;

const std::string kHome = "/Users/ada";
const std::string kApp = kHome + "/src/app";
const std::string kTemp = "/private/var/folders/zz/abc/T";

ProfileOptions base_options() {
  ProfileOptions options;
  options.home = kHome;
  options.proxy_port = 9877;
  options.gate_files = {kHome + "/.config/goose/sandbox/blocked.txt"};
  options.working_directory = kApp;
  options.git_dirs = {kApp + "/.git"};
  options.temp_dir = kTemp;
  return options;
}

std::vector<Sexp> forms_of(const ProfileOptions& options) {
  auto profile = generate_profile(options);
  EXPECT_TRUE(profile) << (profile ? "" : profile.error());
  if (!profile) {
    return {};
  }
  auto forms = testing::read_sbpl(*profile);
  EXPECT_TRUE(forms) << (forms ? "" : forms.error());
  EXPECT_EQ(forms ? testing::check_sbpl(*forms) : "", "");
  return forms ? *forms : std::vector<Sexp>{};
}

bool file(const std::vector<Sexp>& forms, const std::string& operation, const std::string& path,
          const std::string& vnode_type = "") {
  Request request;
  request.operation = operation;
  request.path = path;
  request.vnode_type = vnode_type;
  return testing::evaluate(forms, request);
}

bool writable(const std::vector<Sexp>& forms, const std::string& path) {
  return file(forms, "file-write-data", path) || file(forms, "file-write-create", path) ||
         file(forms, "file-write-unlink", path);
}

bool sysctl(const std::vector<Sexp>& forms, const std::string& name) {
  Request request;
  request.operation = "sysctl-read";
  request.sysctl = name;
  return testing::evaluate(forms, request);
}

bool ip(const std::vector<Sexp>& forms, const std::string& operation, const std::string& protocol,
        std::uint16_t port, const std::string& host = "localhost") {
  Request request;
  request.operation = operation;
  request.protocol = protocol;
  request.port = port;
  request.host = host;
  return testing::evaluate(forms, request);
}

bool unix_bind(const std::vector<Sexp>& forms, const std::string& path) {
  Request request;
  request.operation = "network-bind";
  request.unix_socket = true;
  request.path = path;
  return testing::evaluate(forms, request);
}

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return text;
}

// --- finding 1: the user's terminal -------------------------------------------------------------

TEST(ProfileHold, NoIoctlOnTheUsersTerminalsSoNoTiocsti) {
  ProfileOptions options = base_options();
  options.terminals = {"/dev/ttys003"};
  const auto forms = forms_of(options);
  for (const char* terminal : {"/dev/ttys003", "/dev/tty"}) {
    EXPECT_FALSE(file(forms, "file-ioctl", terminal)) << terminal;
    EXPECT_TRUE(file(forms, "file-write-data", terminal)) << terminal;
  }
  EXPECT_TRUE(file(forms, "file-read-data", "/dev/ttys003"));
  EXPECT_TRUE(file(forms, "file-ioctl", "/dev/null"));
  EXPECT_TRUE(file(forms, "file-ioctl", "/dev/ptmx")) << "ptys of its own (openpty)";
}

// When `run` relays a pty of its own (the follow-up in sandbox-profile/supervisor/), the
// command's terminal is that pty: raw mode and window size work again, and TIOCSTI only types
// into the command's own input.
TEST(ProfileHold, ARelayedTerminalMayBeIoctld) {
  ProfileOptions options = base_options();
  options.terminals = {"/dev/ttys007"};
  options.terminals_relayed = true;
  const auto forms = forms_of(options);
  for (const char* terminal : {"/dev/ttys007", "/dev/tty"}) {
    EXPECT_TRUE(file(forms, "file-ioctl", terminal)) << terminal;
  }
  EXPECT_FALSE(file(forms, "file-ioctl", "/dev/ttys003")) << "another terminal of the user's";
  EXPECT_FALSE(file(forms, "file-read-data", "/dev/ttys003"));
}

// --- finding 2: named sysctls only --------------------------------------------------------------

TEST(ProfileHold, OnlyNamedSysctlsAreReadableNeverOtherProcessesArguments) {
  const auto forms = forms_of(base_options());
  for (const char* name :
       {"kern.procargs2", "kern.procargs", "kern.proc.all", "kern.proc.pid.1", "kern.proc.uid.501",
        "kern.proc", "kern.file", "net.inet.tcp.pcblist", "kern.hostname.x"}) {
    EXPECT_FALSE(sysctl(forms, name)) << name;
  }
  for (const char* name :
       {"hw.ncpu", "hw.activecpu", "hw.logicalcpu", "hw.physicalcpu", "hw.memsize", "hw.pagesize",
        "kern.osrelease", "kern.osversion", "kern.osproductversion", "kern.argmax", "kern.hostname",
        "hw.machine", "hw.model", "machdep.cpu.brand_string", "hw.optional.arm.FEAT_SHA256",
        "hw.perflevel0.logicalcpu", "sysctl.proc_translated"}) {
    EXPECT_TRUE(sysctl(forms, name)) << name;
  }
  for (const auto& form : forms) {
    if (form.items.size() == 2 && form.items[0].is_symbol("allow")) {
      EXPECT_FALSE(form.items[1].is_symbol("sysctl-read")) << "a bare sysctl-read allows all";
    }
  }
}

// --- finding 3: the folders above hidden paths
// ----------------------------------------------------

TEST(ProfileHold, FoldersAboveCredentialStoresCannotBeRenamed) {
  ProfileOptions options = base_options();
  options.working_directory = kHome;  // home mode: ~/.cache is writable
  options.allow_writes = {kHome + "/.claude"};
  options.secret_files = {kHome + "/.cache/huggingface/token",
                          kHome + "/.claude/.credentials.json"};
  options.secret_folders = {kHome + "/.aws"};
  options.unreadable = {kHome + "/.local/state/sandgate/ca"};
  const auto forms = forms_of(options);
  for (const std::string& folder :
       {kHome + "/.cache/huggingface", kHome + "/.cache", kHome + "/.claude", kHome + "/.aws",
        kHome + "/.local/state/sandgate", kHome + "/.local/state"}) {
    EXPECT_FALSE(file(forms, "file-write-unlink", folder)) << "mv " << folder << " x";
    EXPECT_FALSE(file(forms, "file-write-unlink", upper(folder))) << upper(folder);
  }
  // What is beside them stays writable.
  EXPECT_TRUE(file(forms, "file-write-unlink", kHome + "/.cache/other"));
  EXPECT_TRUE(file(forms, "file-write-data", kHome + "/.claude/settings.json"));
}

// --- finding 4: case-folded credential denies -------------------------------------------------

TEST(ProfileHold, CredentialDeniesAreCaseFolded) {
  ProfileOptions options = base_options();
  options.working_directory = kHome;
  options.secret_folders = {kHome + "/.aws", kHome + "/.ssh"};
  options.secret_files = {kHome + "/.netrc"};
  options.secret_shown = {kHome + "/.ssh/known_hosts"};
  const auto forms = forms_of(options);
  for (const std::string& path : {kHome + "/.AWS/credentials", kHome + "/.Aws/config",
                                  kHome + "/.NETRC", kHome + "/.SSH/id_ed25519"}) {
    EXPECT_FALSE(file(forms, "file-read-data", path)) << path;
    EXPECT_FALSE(file(forms, "file-write-data", path)) << path;
  }
  EXPECT_TRUE(file(forms, "file-read-data", kHome + "/.ssh/known_hosts"));
  EXPECT_TRUE(file(forms, "file-read-data", kHome + "/.awsome"));
}

// --- finding 5: git folders -------------------------------------------------------------------

TEST(ProfileHold, GitFoldersAreReadOnlyButForWhatACommitWrites) {
  const auto forms = forms_of(base_options());
  const std::string git = kApp + "/.git";
  for (const std::string& path :
       {git + "/objects/ab/cdef", git + "/objects/pack/pack-1.pack", git + "/refs/heads/main",
        git + "/refs/heads/main.lock", git + "/logs/HEAD", git + "/logs/refs/heads/main",
        git + "/index", git + "/index.lock", git + "/HEAD", git + "/HEAD.lock", git + "/ORIG_HEAD",
        git + "/COMMIT_EDITMSG", git + "/packed-refs", git + "/FETCH_HEAD", git + "/MERGE_HEAD",
        git + "/MERGE_MSG"}) {
    EXPECT_TRUE(file(forms, "file-write-data", path)) << path;
    EXPECT_TRUE(file(forms, "file-write-create", path, "REGULAR-FILE")) << path;
  }
  for (const std::string& path :
       {git + "/commondir", git + "/gitdir", git + "/config", git + "/config.worktree",
        git + "/hooks/pre-commit", git + "/info/attributes", git + "/info/exclude",
        git + "/modules/sub/config", git + "/worktrees/w/commondir", git + "/worktrees/w/gitdir",
        git + "/rebase-merge/git-rebase-todo", git + "/sequencer/todo", git + "/description",
        git + "/objects2", git + "/CONFIG"}) {
    EXPECT_FALSE(writable(forms, path)) << path;
  }
  // No links in a git folder: host git would write through them (COMMIT_EDITMSG -> ~/.zshrc).
  for (const std::string& path : {git + "/refs/heads/x", git + "/COMMIT_EDITMSG", git + "/index"}) {
    EXPECT_FALSE(file(forms, "file-write-create", path, "SYMLINK")) << path;
  }
  // Nested repositories and gitfiles in the working folder: never made or changed.
  for (const std::string& path :
       {kApp + "/vendor/dep/.git", kApp + "/vendor/dep/.git/config",
        kApp + "/vendor/dep/.git/hooks/post-checkout", kApp + "/sub/.GIT/config"}) {
    EXPECT_FALSE(writable(forms, path)) << path;
  }
  EXPECT_TRUE(file(forms, "file-write-data", kApp + "/src/.gitignore"));
  EXPECT_TRUE(file(forms, "file-write-data", kApp + "/.github/workflows/ci.yml"));
  // A clone in the temporary folders still works (nothing of the user's runs git there).
  EXPECT_TRUE(file(forms, "file-write-create", "/private/tmp/clone/.git/config"));
}

TEST(ProfileHold, AWorktreesGitfileAndAdminFolderAreNotRedirected) {
  ProfileOptions options = base_options();
  const std::string common = kHome + "/src/main/.git";
  options.working_directory = kHome + "/src/wt";
  options.git_dirs = {common + "/worktrees/wt", common};
  const auto forms = forms_of(options);
  for (const std::string& path :
       {kHome + "/src/wt/.git", common + "/worktrees/wt/commondir", common + "/worktrees/wt/gitdir",
        common + "/worktrees/wt/config.worktree", common + "/worktrees/other/HEAD",
        common + "/config", common + "/commondir"}) {
    EXPECT_FALSE(writable(forms, path)) << path;
  }
  for (const std::string& path : {common + "/worktrees/wt/HEAD", common + "/worktrees/wt/index",
                                  common + "/worktrees/wt/logs/HEAD", common + "/objects/ab/cd",
                                  common + "/refs/heads/topic"}) {
    EXPECT_TRUE(file(forms, "file-write-data", path)) << path;
  }
}

// --- finding 6: unix sockets --------------------------------------------------------------------

TEST(ProfileHold, UnixSocketsAreBoundOnlyInTheRunsPrivateFolders) {
  ProfileOptions options = base_options();
  const auto shared = forms_of(options);
  for (const std::string& path :
       {std::string("/private/tmp/tmux-501/default"), kTemp + "/vscode-ipc-1.sock",
        kApp + "/.git/fsmonitor--daemon.ipc", kApp + "/x.sock"}) {
    EXPECT_FALSE(unix_bind(shared, path)) << path;
  }
  options.private_folders = {kTemp + "/sandgate-run.1a2b"};
  const auto with_private = forms_of(options);
  EXPECT_TRUE(unix_bind(with_private, kTemp + "/sandgate-run.1a2b/s.sock"));
  EXPECT_FALSE(unix_bind(with_private, "/private/tmp/tmux-501/default"));
}

// --- finding 7: caches and trustd ---------------------------------------------------------------

TEST(ProfileHold, CachesAreOnlyKnownToolsDataFolders) {
  const std::set<std::string> caches(std::begin(kHomeCaches), std::end(kHomeCaches));
  EXPECT_EQ(caches, (std::set<std::string>{"/.npm/_cacache", "/Library/Caches/pip",
                                           "/.cargo/registry", "/go/pkg/mod", "/.m2/repository"}));
  ProfileOptions options = base_options();
  for (const auto& cache : caches) {
    options.home_caches.push_back(kHome + cache);
  }
  const auto forms = forms_of(options);
  for (const std::string& path :
       {kHome + "/Library/Caches/Homebrew/bootsnap/x", kHome + "/Library/Caches/ms-playwright/x",
        kHome + "/.cache/pre-commit/repo/hook", kHome + "/.npm/_npx/1/node_modules/x",
        std::string("/private/var/folders/zz/abc/C/xcrun_db"),
        std::string("/private/var/folders/zz/abc/C/clang/ModuleCache/x.pcm"),
        // Go's VCS cache inside the shared module cache: git repositories git runs in later.
        kHome + "/go/pkg/mod/cache/vcs/0123abcd/config",
        kHome + "/go/pkg/mod/cache/vcs/0123abcd/hooks/post-checkout"}) {
    EXPECT_FALSE(writable(forms, path)) << path;
  }
  for (const std::string& path :
       {kHome + "/Library/Caches/pip/http/x", kHome + "/.npm/_cacache/index-v5/x",
        kHome + "/go/pkg/mod/cache/download/x", kHome + "/.m2/repository/x.jar"}) {
    EXPECT_TRUE(file(forms, "file-write-data", path)) << path;
  }
  for (const auto& folder : writable_folders(options)) {
    EXPECT_NE(folder.path, "/private/var/folders/zz/abc/C");
  }
}

TEST(ProfileHold, TrustdIsOffUnlessAsked) {
  ProfileOptions options = base_options();
  Request lookup;
  lookup.operation = "mach-lookup";
  lookup.mach = "com.apple.trustd.agent";
  EXPECT_FALSE(testing::evaluate(forms_of(options), lookup));
  options.allow_trustd = true;
  EXPECT_TRUE(testing::evaluate(forms_of(options), lookup));
  lookup.mach = "com.apple.system.opendirectoryd.libinfo";
  EXPECT_TRUE(testing::evaluate(forms_of(base_options()), lookup));
}

// --- finding 8: rule order, loopback, macOS secrets, autostart ----------------------------------

TEST(ProfileHold, TheInspectionCasFolderStaysClosedInsideAWritableFolder) {
  ProfileOptions options = base_options();
  options.working_directory = kHome;
  options.unreadable = {kHome + "/.local/state/sandgate/ca"};
  options.secret_shown = {kHome + "/.local/state/sandgate/ca/cert.pem"};  // never re-opens it
  const auto forms = forms_of(options);
  for (const std::string& path : {kHome + "/.local/state/sandgate/ca/key.pem",
                                  kHome + "/.local/state/sandgate/ca/cert.pem"}) {
    EXPECT_FALSE(file(forms, "file-read-data", path)) << path;
    EXPECT_FALSE(writable(forms, path)) << path;
  }
}

TEST(ProfileHold, LoopbackMeansTcpToLocalhostOnTheGatesFamily) {
  ProfileOptions options = base_options();
  options.allow_localhost_ports = {5432};
  options.allow_inbound_ports = {3000};
  const auto forms = forms_of(options);
  EXPECT_TRUE(ip(forms, "network-outbound", "tcp4", 9877));
  EXPECT_FALSE(ip(forms, "network-outbound", "tcp6", 9877)) << "the gate listens on 127.0.0.1";
  EXPECT_FALSE(ip(forms, "network-outbound", "udp4", 9877));
  EXPECT_FALSE(ip(forms, "network-outbound", "tcp4", 9877, "192.168.1.2"));
  EXPECT_TRUE(ip(forms, "network-outbound", "tcp4", 5432));
  EXPECT_TRUE(ip(forms, "network-outbound", "tcp6", 5432));
  EXPECT_FALSE(ip(forms, "network-outbound", "udp4", 5432));
  EXPECT_TRUE(ip(forms, "network-bind", "tcp4", 3000));
  EXPECT_FALSE(ip(forms, "network-bind", "udp4", 3000));
  EXPECT_FALSE(ip(forms, "network-inbound", "udp4", 3000));
  EXPECT_FALSE(ip(forms, "network-outbound", "udp4", 53));
  options.gate_on_ipv6 = true;
  const auto on_ipv6 = forms_of(options);
  EXPECT_TRUE(ip(on_ipv6, "network-outbound", "tcp6", 9877));
  EXPECT_FALSE(ip(on_ipv6, "network-outbound", "tcp4", 9877));
  ProfileOptions any = base_options();
  any.allow_local_bind = true;
  const auto with_local_bind = forms_of(any);
  EXPECT_TRUE(ip(with_local_bind, "network-bind", "tcp4", 8080));
  EXPECT_FALSE(ip(with_local_bind, "network-bind", "udp4", 8080));
  EXPECT_FALSE(ip(with_local_bind, "network-outbound", "udp4", 53));
}

TEST(ProfileHold, CommonMacosSecretsAreUnreadable) {
  ProfileOptions options = base_options();
  options.working_directory = kHome;
  options.protect_files = false;
  // The credential stores macOS adds (credential_stores(..., macos=true)), as run finds them.
  options.secret_folders = {kHome + "/Library/Keychains", kHome + "/Library/Cookies"};
  const auto forms = forms_of(options);
  for (const std::string& path :
       {kHome + "/Library/Messages/chat.db", kHome + "/Library/Mail/V10/x.emlx",
        kHome + "/Library/Safari/History.db", kHome + "/Library/Cookies/Cookies.binarycookies",
        kHome + "/Library/Keychains/login.keychain-db",
        kHome + "/Library/Application Support/AddressBook/AddressBook-v22.abcddb",
        kHome + "/Library/Containers/com.apple.Safari/Data/x",
        kHome + "/Library/Group Containers/group.com.apple.notes/NoteStore.sqlite",
        kHome + "/LIBRARY/MESSAGES/chat.db"}) {
    EXPECT_FALSE(file(forms, "file-read-data", path)) << path;
  }
  EXPECT_TRUE(file(forms, "file-read-data", kHome + "/Library/Preferences/com.x.plist"));
}

TEST(ProfileHold, AutostartPlacesAreNeverWritable) {
  ProfileOptions options = base_options();
  options.working_directory = kHome;
  options.protect_files = false;
  options.allow_writes = {kHome + "/Library", "/Library"};
  const auto forms = forms_of(options);
  for (const std::string& path :
       {kHome + "/Library/LaunchAgents/x.plist",
        kHome + "/Library/Application Support/com.apple.backgroundtaskmanagementagent/"
                "backgrounditems.btm",
        kHome + "/Library/Preferences/com.apple.loginitems.plist",
        kHome + "/Library/Preferences/loginwindow.plist", kHome + "/library/launchagents/x.plist",
        std::string("/Library/LaunchAgents/x.plist"), std::string("/Library/LaunchDaemons/x")}) {
    EXPECT_FALSE(writable(forms, path)) << path;
  }
  EXPECT_TRUE(file(forms, "file-write-data", kHome + "/Library/Preferences/com.x.plist"));
}

TEST(ProfileHold, SetuidHelpersCannotBeRun) {
  const auto forms = forms_of(base_options());
  for (const char* helper : {"/usr/bin/sudo", "/usr/bin/su", "/usr/bin/login", "/usr/bin/crontab",
                             "/usr/bin/at", "/usr/libexec/security_authtrampoline"}) {
    EXPECT_FALSE(file(forms, "process-exec", helper)) << helper;
  }
  EXPECT_TRUE(file(forms, "process-exec", "/usr/bin/git"));
  EXPECT_TRUE(file(forms, "process-exec", "/opt/homebrew/bin/sudoku"));
}

// --- rule order, proven for every protected or hidden path in every mode ------------------------

struct Mode {
  const char* name;
  ProfileOptions options;
};

std::vector<Mode> modes() {
  ProfileOptions common = base_options();
  common.path_entries = {"/usr/local/bin", kHome + "/.local/bin", kApp + "/node_modules/.bin"};
  common.own_executables = {"/opt/sandgate/bin/sandgate"};
  common.secret_folders = {kHome + "/.aws", kHome + "/.ssh", kHome + "/Library/Keychains"};
  common.secret_files = {kHome + "/.netrc", kHome + "/.cache/huggingface/token",
                         kHome + "/.claude/.credentials.json"};
  common.secret_shown = {kHome + "/.ssh/known_hosts"};
  common.unreadable = {kHome + "/.local/state/sandgate/ca"};
  common.ssh_auth_sock = "/private/tmp/com.apple.launchd.x/Listeners";
  common.terminals = {"/dev/ttys003"};
  common.home_caches = {kHome + "/.npm/_cacache"};
  std::vector<Mode> out;
  out.push_back({"default", common});
  Mode home{"home", common};
  home.options.working_directory = kHome;
  home.options.git_dirs = {};
  out.push_back(home);
  Mode extra{"allow-write", common};
  extra.options.allow_writes = {kHome, "/Library", "/usr/local", "/private/etc",
                                kHome + "/.claude"};
  out.push_back(extra);
  Mode worktree{"worktree", common};
  worktree.options.working_directory = kHome + "/src/wt";
  worktree.options.git_dirs = {kApp + "/.git/worktrees/wt", kApp + "/.git"};
  out.push_back(worktree);
  return out;
}

// Whether some allow rule of `forms`, taken alone, matches `request`: the deny that decides
// against it then wins over that allow, rather than over nothing.
bool an_allow_matches(const std::vector<Sexp>& forms, const Request& request) {
  return std::any_of(forms.begin(), forms.end(), [&](const Sexp& form) {
    return form.items.size() >= 2 && form.items[0].is_symbol("allow") &&
           testing::evaluate(std::vector<Sexp>{form}, request);
  });
}

TEST(ProfileHold, EveryProtectedOrHiddenPathsDenyWinsInEveryMode) {
  for (const auto& mode : modes()) {
    SCOPED_TRACE(mode.name);
    const auto forms = forms_of(mode.options);
    std::vector<ProtectedPath> written = profile_protected_paths(mode.options);
    std::vector<ProtectedPath> hidden;
    for (const auto& folder : mode.options.secret_folders) {
      hidden.push_back({folder, true, true});
    }
    for (const auto& path : mode.options.secret_files) {
      hidden.push_back({path, false, true});
    }
    for (const auto& folder : mode.options.unreadable) {
      hidden.push_back({folder, true, true});
    }
    for (const auto& folder : macos_hidden_folders(mode.options.home)) {
      hidden.push_back({folder, true, true});
    }
    written.insert(written.end(), hidden.begin(), hidden.end());
    ASSERT_GT(written.size(), 40u);
    std::set<std::string> parents;
    for (const auto& p : written) {
      std::vector<std::string> spellings = {p.path, upper(p.path)};
      if (p.tree) {
        spellings.push_back(p.path + "/x");
        spellings.push_back(upper(p.path) + "/X");
      }
      if (std::string(mode.name) == "allow-write" && p.path.starts_with(kHome + "/")) {
        // Everything in the home is writable in this mode: each deny beats an allow.
        Request request;
        request.operation = "file-write-data";
        request.path = p.path;
        EXPECT_TRUE(an_allow_matches(forms, request)) << p.path;
      }
      for (const auto& path : spellings) {
        EXPECT_FALSE(file(forms, "file-write-data", path)) << path;
        EXPECT_FALSE(file(forms, "file-write-create", path)) << path;
        EXPECT_FALSE(file(forms, "file-write-unlink", path)) << path;
      }
      for (std::size_t slash = p.path.find('/', 1); slash != std::string::npos;
           slash = p.path.find('/', slash + 1)) {
        parents.insert(p.path.substr(0, slash));
      }
    }
    for (const auto& p : hidden) {
      const std::string inside = p.tree ? p.path + "/x" : p.path;
      EXPECT_FALSE(file(forms, "file-read-data", inside)) << inside;
      EXPECT_FALSE(file(forms, "file-read-data", upper(inside))) << upper(inside);
    }
    for (const auto& parent : parents) {
      EXPECT_FALSE(file(forms, "file-write-unlink", parent)) << "mv " << parent;
    }
  }
}

}  // namespace
}  // namespace sandgate::sandbox
