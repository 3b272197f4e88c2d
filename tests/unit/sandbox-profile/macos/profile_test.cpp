// The Seatbelt profile: golden files for every combination of goose's three toggles (and for
// strict unix sockets with every flag), parsed back with a small SBPL reader; its deny-default
// structure (the first rule, the Mach allow-list, the writable folders, what stays within the
// sandbox), checked form by form and by a small evaluator of SBPL's last-match-wins order;
// strings that round trip for awkward home folders; the rules each toggle and flag adds or
// removes; and the paths that must be refused.
//
// Regenerate the golden files after an intended change with
//   SANDGATE_UPDATE_GOLDEN=1 build/tests/sandbox_test --gtest_filter='ProfileGolden*'
// and review the diff.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "sandbox-profile/macos/profile.hpp"
#include "sandbox-profile/plan/protected_paths.hpp"
#include "tests/unit/sandbox-profile/macos/sbpl_reader.hpp"

namespace sandgate::sandbox {
namespace {

using testing::read_sbpl;
using testing::Sexp;

const std::string kGoldenDir =
    std::string(SANDGATE_SOURCE_DIR) + "/tests/unit/sandbox-profile/macos/golden/";

ProfileOptions base_options(const std::string& home = "/Users/ada") {
  ProfileOptions options;
  options.home = home;
  options.proxy_port = 9877;
  options.gate_files = {home + "/.config/goose/sandbox/blocked.txt"};
  return options;
}

std::vector<Sexp> parse(const std::string& text) {
  auto forms = read_sbpl(text);
  EXPECT_TRUE(forms) << (forms ? "" : forms.error()) << "\n" << text;
  return forms ? *forms : std::vector<Sexp>{};
}

std::string generate(const ProfileOptions& options) {
  auto profile = generate_profile(options);
  EXPECT_TRUE(profile) << (profile ? "" : profile.error());
  return profile ? *profile : std::string();
}

// The top-level forms, printed: order-free sets for "what did this toggle change".
std::multiset<std::string> form_set(const std::string& text) {
  std::multiset<std::string> out;
  for (const auto& form : parse(text)) {
    out.insert(form.print());
  }
  return out;
}

struct Diff {
  std::vector<std::string> added;
  std::vector<std::string> removed;
};

Diff diff(const std::string& before, const std::string& after) {
  const auto a = form_set(before);
  const auto b = form_set(after);
  Diff d;
  std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(d.added));
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(d.removed));
  return d;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// --- golden files ---------------------------------------------------------------------------

struct GoldenCase {
  std::string name;
  ProfileOptions options;
};

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> cases;
  for (int bits = 0; bits < 8; ++bits) {
    ProfileOptions options = base_options();
    options.protect_files = (bits & 4) != 0;
    options.block_raw_sockets = (bits & 2) != 0;
    options.block_tunneling = (bits & 1) != 0;
    const auto on = [](bool v) { return v ? "on" : "off"; };
    cases.push_back({std::string("protect-") + on(options.protect_files) + "_raw-" +
                         on(options.block_raw_sockets) + "_tunnel-" + on(options.block_tunneling),
                     options});
  }
  ProfileOptions strict = base_options();
  strict.strict_unix_sockets = true;
  strict.ssh_auth_sock = "/private/tmp/agent.sock";
  strict.allow_unix_sockets = {"/Users/ada/.colima/default/docker.sock", "/private/tmp/a.sock"};
  strict.allow_unix_socket_folders = {"/Users/ada/.cache/sockets"};
  strict.allow_localhost_ports = {5432, 3000, 5432};
  strict.allow_inbound_ports = {8123};
  strict.gate_files.push_back("/etc/sandgate/allow.txt");
  cases.push_back({"strict-unix-sockets_with-flags", strict});
  cases.push_back(
      {"home-with-quotes-backslash-space-non-ascii", base_options("/Users/Zoë \"Q\" O\\Brien")});
  // What `run` adds from the process: the repository, PATH, its own executables, a dotfile
  // behind a symbolic link; and --allow-local-bind.
  ProfileOptions work = base_options();
  work.working_directory = "/Users/ada/src/app";
  work.git_dirs = {"/Users/ada/src/app/.git"};
  work.path_entries = {"/opt/homebrew/bin", "/Users/ada/.cargo/bin", "/usr/bin",
                       "/Users/ada/src/app/node_modules/.bin"};
  work.own_executables = {"/opt/homebrew/Cellar/sandgate/1.0/bin/sandgate",
                          "/opt/homebrew/Cellar/sandgate/1.0/bin/sandgate-connect"};
  work.resolved_spellings = {{"/Users/ada/dotfiles/zshrc", false, false}};
  work.allow_local_bind = true;
  work.temp_dir = "/private/var/folders/zz/abc123_n4/T";
  work.home_caches = {"/Users/ada/.cache", "/Users/ada/Library/Caches"};
  work.allow_writes = {"/Users/ada/data"};
  work.terminals = {"/dev/ttys003"};
  cases.push_back({"run-in-a-repository_local-bind", work});
  // HOME changed to a scratch folder: the real home (the passwd entry's) is protected too.
  ProfileOptions scratch = base_options("/private/tmp/scratch");
  scratch.real_home = "/Users/ada";
  scratch.ssh_auth_sock = "/private/tmp/com.apple.launchd.abc/Listeners";
  cases.push_back({"home-changed_real-home-protected", scratch});
  // A gate on a unix socket only, and HOME=/.
  ProfileOptions socket = base_options("/");
  socket.proxy_port = 0;
  socket.gate_unix_socket = "/Users/ada/.config/sandgate/gate.sock";
  socket.gate_files.clear();
  cases.push_back({"unix-socket-gate_home-root", socket});
  return cases;
}

TEST(ProfileGolden, EveryToggleCombinationMatchesItsGoldenFile) {
  const bool update = std::getenv("SANDGATE_UPDATE_GOLDEN") != nullptr;
  for (const auto& c : golden_cases()) {
    SCOPED_TRACE(c.name);
    const std::string text = generate(c.options);
    const std::string path = kGoldenDir + c.name + ".sb";
    if (update) {
      std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
      continue;
    }
    EXPECT_EQ(read_file(path), text)
        << "golden file " << path << " differs; see the header of this test to regenerate";
    // And the golden file itself is well-formed SBPL in sandgate's vocabulary.
    auto forms = read_sbpl(read_file(path));
    ASSERT_TRUE(forms) << forms.error();
    EXPECT_EQ(testing::check_sbpl(*forms), "");
  }
}

TEST(ProfileGolden, GenerationIsDeterministic) {
  for (const auto& c : golden_cases()) {
    EXPECT_EQ(generate(c.options), generate(c.options)) << c.name;
  }
}

// --- structure --------------------------------------------------------------------------------

TEST(Profile, DenyDefaultIsTheFirstRuleAndNothingAllowsEverything) {
  for (const auto& c : golden_cases()) {
    SCOPED_TRACE(c.name);
    const auto forms = parse(generate(c.options));
    ASSERT_GE(forms.size(), 3u);
    EXPECT_EQ(forms[0].print(), "(version 1)");
    EXPECT_EQ(forms[1].print(), "(deny default)");
    for (std::size_t i = 2; i < forms.size(); ++i) {
      const auto& form = forms[i];
      // No (allow default), and no second word on the default.
      for (const auto& item : form.items) {
        EXPECT_FALSE(item.is_symbol("default")) << form.print();
      }
      // No operation allowed without a filter but those that need none: a bare allow of a
      // wildcard such as file-write*, network* or mach-lookup would undo the default.
      if (form.items.size() == 2 && form.items[0].is_symbol("allow")) {
        static const std::set<std::string> bare = {
            "process-exec",         "process-fork",  "sysctl-read",
            "user-preference-read", "file-read*",    "iokit-get-properties",
            "ipc-posix-shm",        "ipc-posix-sem", "pseudo-tty"};
        EXPECT_EQ(bare.count(form.items[1].text), 1u) << form.print();
      }
    }
  }
  EXPECT_EQ(generate(base_options()).find("(allow default)"), std::string::npos);
}

int index_of(const std::vector<Sexp>& forms, const std::string& printed) {
  for (std::size_t i = 0; i < forms.size(); ++i) {
    if (forms[i].print() == printed) {
      return static_cast<int>(i);
    }
  }
  ADD_FAILURE() << "missing " << printed;
  return -1;
}

int index_starting(const std::vector<Sexp>& forms, const std::string& prefix) {
  for (std::size_t i = 0; i < forms.size(); ++i) {
    if (forms[i].print().starts_with(prefix)) {
      return static_cast<int>(i);
    }
  }
  ADD_FAILURE() << "missing " << prefix << "...";
  return -1;
}

// For one operation, a later rule overrides an earlier one: each denial must come after the
// allow it narrows, and no allow may come after the denials of protected paths.
TEST(Profile, DenialsComeAfterTheAllowsTheyNarrow) {
  ProfileOptions options = base_options();
  options.allow_unix_sockets = {"/var/run/docker.sock"};
  options.allow_localhost_ports = {5432};
  options.allow_local_bind = true;
  options.working_directory = "/Users/ada/src/app";
  options.git_dirs = {"/Users/ada/src/app/.git"};
  options.secret_folders = {"/Users/ada/.aws"};
  options.secret_shown = {"/Users/ada/.aws/config"};
  options.unreadable = {"/Users/ada/.local/share/sandgate/ca"};
  const auto forms = parse(generate(options));
  EXPECT_LT(index_of(forms, "(allow process-exec)"),
            index_starting(forms, "(deny process-exec (regex"));
  EXPECT_LT(index_of(forms, "(allow file-read*)"), index_starting(forms, "(deny file-read* "));
  const int write_allow = index_starting(forms, "(allow file-write* ");
  // The git folders' deny is narrowed by what a commit writes, right after it; the credential
  // stores' by what stays shown. From the inspection CA's folder on, only denials.
  const int git_deny =
      index_starting(forms, "(deny file-write* (subpath \"/Users/ada/src/app/.git\")");
  EXPECT_LT(write_allow, git_deny);
  EXPECT_EQ(
      index_starting(forms, "(allow file-write* (subpath \"/Users/ada/src/app/.git/objects\")"),
      git_deny + 1);
  const int first_write_deny =
      index_starting(forms, "(deny file-read* file-write* (subpath \"/Users/ada/.local/share");
  EXPECT_LT(write_allow, first_write_deny);
  EXPECT_LT(write_allow, index_of(forms, "(deny file-link)"));
  EXPECT_LT(write_allow, index_of(forms, "(deny file-write-setugid)"));
  EXPECT_LT(write_allow, index_starting(forms, "(deny file-write-create file-write-unlink "));
  EXPECT_LT(index_starting(forms, "(allow system-socket"),
            index_starting(forms, "(deny system-socket"));
  // No allow of a file operation after the protected paths' denials.
  for (int i = first_write_deny; i < static_cast<int>(forms.size()); ++i) {
    const auto& form = forms[i];
    if (form.items.size() >= 2 && form.items[0].is_symbol("allow")) {
      EXPECT_FALSE(form.items[1].text.starts_with("file-")) << form.print();
    }
  }
}

// Item 11: nothing outside the sandbox acts for the command: no Launch Services, Apple events,
// launchd jobs or distributed notifications are allowed, nor the services behind them.
TEST(Profile, LaunchServicesAppleEventsAndLaunchdJobsAreNotAllowed) {
  const auto forms = parse(generate(base_options()));
  for (const auto& form : forms) {
    if (!form.items.empty() && form.items[0].is_symbol("allow")) {
      for (const char* op :
           {"lsopen", "appleevent-send", "job-creation", "distributed-notification-post",
            "mach-register", "mach-host*", "mach-priv-task-port", "mach-task-name", "iokit-open",
            "user-preference-write", "system-kext-load", "nvram*"}) {
        EXPECT_FALSE(form.items[1].is_symbol(op)) << form.print();
      }
    }
  }
}

// Item 12: no resolver socket (a DNS channel out); the gate resolves names.
TEST(Profile, NoMdnsResponder) {
  for (const auto& text : testing::all_strings(parse(generate(base_options())))) {
    EXPECT_EQ(text.find("mDNSResponder"), std::string::npos) << text;
  }
}

TEST(Profile, OnlyTheGatesPortIsReachableOnLocalhostByDefault) {
  const std::string text = generate(base_options());
  EXPECT_NE(text.find("(allow network-outbound (remote tcp4 \"localhost:9877\"))"),
            std::string::npos);
  EXPECT_EQ(text.find(" ip \""), std::string::npos) << "TCP only, never UDP";
  EXPECT_EQ(text.find("udp"), std::string::npos);
  // goose's `localhost:*` is gone, outbound and inbound.
  EXPECT_EQ(text.find("localhost:*"), std::string::npos);
  EXPECT_EQ(text.find("network-inbound"), std::string::npos);
  EXPECT_EQ(text.find("(remote ip \"*"), std::string::npos);
}

TEST(Profile, TunnellingToolsAreDeniedByNameAnywhere) {
  const std::string text = generate(base_options());
  EXPECT_NE(text.find("(deny process-exec (regex #\"/(nc|ncat|netcat|socat|telnet)$\"))"),
            std::string::npos);
  EXPECT_EQ(text.find("\"/usr/bin/nc\""), std::string::npos);
}

// Item 13: unix sockets are an allow-list: SSH_AUTH_SOCK, the gate's socket, the listed ones.
TEST(ProfileUnixSockets, OnlyTheAllowListIsReachable) {
  ProfileOptions options = base_options();
  options.ssh_auth_sock = "/private/tmp/com.apple.launchd.abc/Listeners";
  options.gate_unix_socket = "/Users/ada/gate.sock";
  options.allow_unix_sockets = {"/tmp/b.sock", "/tmp/a.sock", "/tmp/b.sock"};
  options.allow_unix_socket_folders = {"/Users/ada/.cache/mine"};
  const auto forms = parse(generate(options));
  std::vector<std::string> allowed;
  for (const auto& form : forms) {
    const std::string printed = form.print();
    if (printed.find("unix-socket") == std::string::npos) {
      continue;
    }
    if (printed.starts_with("(allow network-bind")) {
      continue;  // serving: where the socket may be created is up to the file rules
    }
    ASSERT_TRUE(printed.starts_with("(allow network-outbound ")) << printed;
    for (std::size_t i = 2; i < form.items.size(); ++i) {
      allowed.push_back(form.items[i].print());
    }
  }
  EXPECT_EQ(allowed, (std::vector<std::string>{
                         "(remote unix-socket (path-literal \"/Users/ada/gate.sock\"))",
                         "(remote unix-socket (path-literal "
                         "\"/private/tmp/com.apple.launchd.abc/Listeners\"))",
                         "(remote unix-socket (path-literal \"/tmp/a.sock\"))",
                         "(remote unix-socket (path-literal \"/tmp/b.sock\"))",
                         "(remote unix-socket (subpath \"/Users/ada/.cache/mine\"))"}));
  // No blanket allow, no name-based deny list to rename around.
  const std::string text = generate(base_options());
  EXPECT_EQ(text.find("(allow network-outbound (remote unix-socket))"), std::string::npos);
  EXPECT_EQ(text.find("docker"), std::string::npos);
  EXPECT_EQ(text.find("(allow network-outbound (remote unix-socket"), std::string::npos)
      << "nothing listed, no agent: no unix socket at all";
}

// --- deny-default structure ---------------------------------------------------------------

// What the profile decides for the file operation `operation` on `path` (testing::evaluate: the
// last matching rule wins).
bool allowed(const std::vector<Sexp>& forms, const std::string& operation,
             const std::string& path) {
  testing::Request request;
  request.operation = operation;
  request.path = path;
  request.unix_socket = operation.starts_with("network");
  return testing::evaluate(forms, request);
}

TEST(ProfileEvaluator, WritesOnlyInTheWritableFoldersAndNeverToProtectedPaths) {
  ProfileOptions options = base_options();
  options.working_directory = "/Users/ada/src/app";
  options.git_dirs = {"/Users/ada/src/app/.git"};
  options.temp_dir = "/private/var/folders/zz/abc/T";
  options.home_caches = {"/Users/ada/.cache"};
  options.allow_writes = {"/Users/ada/data"};
  const auto forms = parse(generate(options));
  for (const char* path : {"/Users/ada/src/app/main.c", "/Users/ada/src/app/.git/index",
                           "/private/var/folders/zz/abc/T/x", "/private/tmp/x",
                           "/private/var/tmp/x", "/Users/ada/.cache/pip/x", "/Users/ada/data/y"}) {
    EXPECT_TRUE(allowed(forms, "file-write-create", path)) << path;
    EXPECT_TRUE(allowed(forms, "file-write-data", path)) << path;
  }
  for (const char* path :
       {"/Users/ada/.zshrc", "/Users/ada/Documents/x", "/Users/ada/.local/lib/python3.12/x.pth",
        "/Users/ada/.vimrc", "/Users/ada/Library/Preferences/com.apple.Terminal.plist",
        "/Users/ada/src/app/.git/config", "/Users/ada/src/app/.git/hooks/pre-commit",
        "/Users/ada/.config/sandgate/allow.txt", "/private/etc/hosts", "/usr/local/bin/x",
        "/private/var/folders/zz/abc/0/x", "/private/var/folders/zz/abc/C/xcrun_db",
        "/Applications/x", "/Library/LaunchDaemons/x.plist", "/dev/disk0", "/dev/bpf0",
        "/dev/ttys009"}) {
    EXPECT_FALSE(allowed(forms, "file-write-data", path)) << path;
    EXPECT_FALSE(allowed(forms, "file-write-create", path)) << path;
  }
  // Case-folded spellings of protected paths stay denied inside a writable folder.
  ProfileOptions home_work = options;
  home_work.working_directory = "/Users/ada";
  const auto from_home = parse(generate(home_work));
  EXPECT_TRUE(allowed(from_home, "file-write-data", "/Users/ada/notes.txt"));
  EXPECT_FALSE(allowed(from_home, "file-write-data", "/Users/ada/.ZSHRC"));
  EXPECT_FALSE(allowed(from_home, "file-write-data", "/Users/ada/.ssh/authorized_keys"));
  // Devices: data to the null device and the terminal, nothing else.
  EXPECT_TRUE(allowed(forms, "file-write-data", "/dev/null"));
  EXPECT_TRUE(allowed(forms, "file-write-data", "/dev/tty"));
  EXPECT_TRUE(allowed(forms, "file-write-data", "/dev/fd/1"));
  EXPECT_FALSE(allowed(forms, "file-write-unlink", "/dev/null"));
  // Terminals: the command's own and those it opens (pty extension, which the evaluator never
  // holds), never another of the user's, whose keys a read would take.
  ProfileOptions on_terminal = options;
  on_terminal.terminals = {"/dev/ttys003"};
  const auto with_terminal = parse(generate(on_terminal));
  EXPECT_TRUE(allowed(with_terminal, "file-read-data", "/dev/ttys003"));
  EXPECT_TRUE(allowed(with_terminal, "file-write-data", "/dev/ttys003"));
  EXPECT_FALSE(allowed(with_terminal, "file-ioctl", "/dev/ttys003")) << "TIOCSTI: issue 41";
  for (const char* other : {"/dev/ttys004", "/dev/ttys0031"}) {
    EXPECT_FALSE(allowed(with_terminal, "file-read-data", other)) << other;
    EXPECT_FALSE(allowed(with_terminal, "file-write-data", other)) << other;
    EXPECT_FALSE(allowed(with_terminal, "file-ioctl", other)) << other;
  }
  EXPECT_TRUE(allowed(with_terminal, "file-read-metadata", "/dev/ttys004")) << "ls -l /dev";
  // Reads: everything but the packet-capture devices.
  EXPECT_TRUE(allowed(forms, "file-read-data", "/Users/ada/.zshrc"));
  EXPECT_TRUE(allowed(forms, "file-read-data", "/etc/hosts"));
  EXPECT_FALSE(allowed(forms, "file-read-data", "/dev/bpf0"));
  EXPECT_FALSE(allowed(forms, "file-read-data", "/dev/bpf"));
  // No hard links, no set-user-ID bits, even in the working folder.
  EXPECT_FALSE(allowed(forms, "file-link", "/Users/ada/src/app/x"));
  EXPECT_FALSE(allowed(forms, "file-write-setugid", "/Users/ada/src/app/x"));
}

// The credential stores: neither read nor written, even inside a writable working folder that
// holds them; what stays readable in them (known_hosts) is readable, and nothing else changes.
// Issue 40, 10: what editors, shells and agents run or trust in the working folder is denied,
// existing or not, unless --allow-write names it; the rest of the folder stays writable.
TEST(ProfileEvaluator, AutoRunFilesInTheWorkingFolderAreDeniedUnlessNamed) {
  ProfileOptions options = base_options();
  options.working_directory = "/Users/ada/src/app";
  options.allow_writes = {"/Users/ada/src/app/.claude"};
  const auto forms = parse(generate(options));
  for (const char* path :
       {"/Users/ada/src/app/.envrc", "/Users/ada/src/app/.vscode/tasks.json",
        "/Users/ada/src/app/.vscode/settings.json", "/Users/ada/src/app/.idea/workspace.xml",
        "/Users/ada/src/app/.mcp.json", "/Users/ada/src/app/.husky/pre-commit",
        "/Users/ada/src/app/.gitmodules", "/Users/ada/src/app/.pre-commit-config.yaml"}) {
    EXPECT_FALSE(allowed(forms, "file-write-create", path)) << path;
    EXPECT_FALSE(allowed(forms, "file-write-data", path)) << path;
  }
  for (const char* path : {"/Users/ada/src/app/.claude/settings.json",
                           "/Users/ada/src/app/.vscode/notes.md", "/Users/ada/src/app/main.c"}) {
    EXPECT_TRUE(allowed(forms, "file-write-data", path)) << path;
  }
}

TEST(ProfileEvaluator, CredentialStoresAreNeitherReadNorWrittenButWhatIsShown) {
  ProfileOptions options = base_options();
  options.working_directory = "/Users/ada";
  options.secret_folders = {"/Users/ada/.aws", "/Users/ada/.ssh", "/Users/ada/Library/Keychains"};
  options.secret_files = {"/Users/ada/.netrc"};
  options.secret_shown = {"/Users/ada/.ssh/known_hosts", "/Users/ada/.ssh/config.d"};
  const auto forms = parse(generate(options));
  for (const char* path :
       {"/Users/ada/.aws/credentials", "/Users/ada/.ssh/id_ed25519", "/Users/ada/.netrc",
        "/Users/ada/Library/Keychains/login.keychain-db", "/Users/ada/.aws"}) {
    EXPECT_FALSE(allowed(forms, "file-read-data", path)) << path;
    EXPECT_FALSE(allowed(forms, "file-write-data", path)) << path;
    EXPECT_FALSE(allowed(forms, "file-write-create", path)) << path;
  }
  for (const char* path : {"/Users/ada/.ssh/known_hosts", "/Users/ada/.ssh/config.d/work"}) {
    EXPECT_TRUE(allowed(forms, "file-read-data", path)) << path;
  }
  EXPECT_TRUE(allowed(forms, "file-read-data", "/Users/ada/.netrc2"));
  EXPECT_TRUE(allowed(forms, "file-write-data", "/Users/ada/notes.txt"));
  EXPECT_TRUE(allowed(forms, "file-read-data", "/Users/ada/.awsome/x"));
}

// Every file-write* allow is a folder writable_folders() lists, and the list is what the options
// say; other write allows are devices.
TEST(ProfileStructure, EveryFileWriteAllowIsAListedFolder) {
  for (const auto& c : golden_cases()) {
    SCOPED_TRACE(c.name);
    std::set<std::string> listed;
    for (const auto& folder : writable_folders(c.options)) {
      EXPECT_NE(folder.path, "/");
      EXPECT_FALSE(folder.why.empty());
      listed.insert("(subpath " + Sexp{Sexp::Kind::string, folder.path, {}}.print() + ")");
    }
    std::set<std::string> seen;
    for (const auto& form : parse(generate(c.options))) {
      if (form.items.size() < 2 || !form.items[0].is_symbol("allow")) {
        continue;
      }
      std::size_t i = 1;
      bool write = false;
      bool file = false;
      for (; i < form.items.size() && form.items[i].kind == Sexp::Kind::symbol; ++i) {
        write = write || form.items[i].is_symbol("file-write*");
        file = file || form.items[i].text.starts_with("file-");
      }
      if (write) {
        for (; i < form.items.size(); ++i) {
          // What a commit writes in a git folder, opened again after the git folders' denial.
          const bool in_git_dir = std::any_of(
              c.options.git_dirs.begin(), c.options.git_dirs.end(), [&](const std::string& dir) {
                return form.items[i].items.size() == 2 &&
                       form.items[i].items[1].text.starts_with(dir + "/");
              });
          if (!in_git_dir) {
            seen.insert(form.items[i].print());
          }
        }
      } else if (file && form.print() != "(allow file-read*)") {
        // file-write-data, file-ioctl: devices only.
        for (; i < form.items.size(); ++i) {
          const std::string printed = form.items[i].print();
          EXPECT_TRUE(printed.starts_with("(literal \"/dev/") ||
                      printed == "(subpath \"/dev/fd\")" ||
                      printed.starts_with("(require-all (regex #\"^/dev/ttys"))
              << form.print();
        }
      }
    }
    EXPECT_EQ(seen, listed);
    EXPECT_EQ(listed.count("(subpath \"/private/tmp\")"), 1u);
  }
  ProfileOptions root_work = base_options();
  root_work.working_directory = "/";
  root_work.allow_writes = {"/"};
  for (const auto& folder : writable_folders(root_work)) {
    EXPECT_NE(folder.path, "/") << "the working folder / never makes everything writable";
  }
  ProfileOptions temp = base_options();
  temp.temp_dir = "/private/var/folders/zz/abc/T";
  const auto folders = writable_folders(temp);
  EXPECT_TRUE(std::any_of(folders.begin(), folders.end(), [](const WritableFolder& f) {
    return f.path == "/private/var/folders/zz/abc/T";
  }));
  // Not the per-user cache folder C (xcrun's tool cache, clang's modules: issue 41), nor 0.
  EXPECT_FALSE(std::any_of(folders.begin(), folders.end(), [](const WritableFolder& f) {
    return f.path == "/private/var/folders/zz/abc" || f.path == "/private/var/folders/zz/abc/0" ||
           f.path == "/private/var/folders/zz/abc/C";
  }));
}

// The Mach allow-list is exactly kAllowedMachServices, in one rule, each name after a comment
// giving its reason; and docs/confinement.md lists every one.
TEST(ProfileStructure, MachLookupIsExactlyTheDocumentedList) {
  const std::string text = generate(base_options());
  std::vector<std::string> names;
  int rules = 0;
  for (const auto& form : parse(text)) {
    if (form.items.size() >= 2 && form.items[1].is_symbol("mach-lookup")) {
      ASSERT_TRUE(form.items[0].is_symbol("allow")) << form.print();
      ++rules;
      for (std::size_t i = 2; i < form.items.size(); ++i) {
        ASSERT_EQ(form.items[i].items.size(), 2u) << form.print();
        ASSERT_TRUE(form.items[i].items[0].is_symbol("global-name")) << form.print();
        names.push_back(form.items[i].items[1].text);
      }
    }
  }
  EXPECT_EQ(rules, 1);
  std::vector<std::string> documented;
  const std::string docs = read_file(std::string(SANDGATE_SOURCE_DIR) + "/docs/confinement.md");
  for (const auto& service : kAllowedMachServices) {
    documented.emplace_back(service.name);
    const std::string quoted = std::string("(global-name \"") + service.name + "\")";
    const std::string comment = std::string(";; ") + service.why + "\n";
    const auto at = text.find(quoted);
    ASSERT_NE(at, std::string::npos) << service.name;
    const auto line_start = text.rfind('\n', text.rfind('\n', at) - 1) + 1;
    EXPECT_NE(text.substr(line_start, at - line_start).find(comment), std::string::npos)
        << service.name << ": no reason on the line above";
    EXPECT_NE(docs.find(std::string("`") + service.name + "`"), std::string::npos)
        << service.name << " is not in docs/confinement.md";
  }
  EXPECT_EQ(names, documented);
  // Never these: each hands the command a way around the sandbox or the gate.
  for (const char* refused :
       {"com.apple.pasteboard.1", "com.apple.windowserver.active", "com.apple.dnssd.service",
        "com.apple.mDNSResponder", "com.apple.coreservices.launchservicesd",
        "com.apple.coreservices.appleevents", "com.apple.nsurlsessiond", "com.apple.cfprefsd.agent",
        "com.apple.SecurityServer", "com.apple.tccd", "com.apple.distributed_notifications@Uv3",
        "com.apple.xpc.launchd.domain.system"}) {
    EXPECT_EQ(std::count(names.begin(), names.end(), refused), 0) << refused;
  }
}

// Process information and signals only within the sandbox; no task ports; no IOKit user client,
// no packet capture, no sysctl writes but the JVM's.
TEST(ProfileStructure, ProcessesIokitBpfAndSysctlStayClosed) {
  for (const auto& c : golden_cases()) {
    SCOPED_TRACE(c.name);
    const auto forms = parse(generate(c.options));
    for (const auto& form : forms) {
      if (form.items.size() < 2 || !form.items[0].is_symbol("allow")) {
        continue;
      }
      const Sexp& op = form.items[1];
      if (op.is_symbol("signal") || op.is_symbol("process-info*")) {
        EXPECT_EQ(form.items.size(), 3u) << form.print();
        EXPECT_EQ(form.items.back().print(), "(target same-sandbox)") << form.print();
      }
      EXPECT_FALSE(op.text.starts_with("iokit-open")) << form.print();
      EXPECT_FALSE(op.text.starts_with("mach-priv")) << form.print();
      EXPECT_FALSE(op.is_symbol("mach-task-name")) << form.print();
      if (op.is_symbol("sysctl-write")) {
        EXPECT_EQ(form.print(), "(allow sysctl-write (sysctl-name \"kern.grade_cputype\"))");
      }
      if (op.is_symbol("system-socket")) {
        for (std::size_t i = 2; i < form.items.size(); ++i) {
          EXPECT_TRUE(form.items[i].print() == "(socket-domain AF_UNIX)" ||
                      form.items[i].print() == "(socket-domain AF_INET)" ||
                      form.items[i].print() == "(socket-domain AF_INET6)")
              << form.print();
        }
      }
    }
    EXPECT_EQ(form_set(generate(c.options)).count("(allow signal (target same-sandbox))"), 1u);
    EXPECT_EQ(form_set(generate(c.options)).count("(allow process-info* (target same-sandbox))"),
              1u);
    for (const char* device : {"/dev/bpf0", "/dev/bpf", "/dev/bpf12"}) {
      EXPECT_FALSE(allowed(forms, "file-read-data", device)) << device;
      EXPECT_FALSE(allowed(forms, "file-write-data", device)) << device;
      EXPECT_FALSE(allowed(forms, "file-ioctl", device)) << device;
    }
  }
}

// HOME changed: the passwd entry's home is protected as well as $HOME.
TEST(ProfileFiles, TheRealHomeIsProtectedWhenHomeWasChanged) {
  ProfileOptions options = base_options("/Users/ada/scratch");
  options.real_home = "/Users/ada";
  options.working_directory = "/Users/ada";  // the worst case: both homes writable
  const auto forms = parse(generate(options));
  for (const char* path : {"/Users/ada/.zshrc", "/Users/ada/.ssh/config", "/Users/ada/.gitconfig",
                           "/Users/ada/Library/LaunchAgents/x.plist", "/Users/ada/scratch/.zshrc",
                           "/Users/ada/scratch/.gitconfig"}) {
    EXPECT_FALSE(allowed(forms, "file-write-data", path)) << path;
  }
  EXPECT_TRUE(allowed(forms, "file-write-data", "/Users/ada/notes.txt"));
  // The same home twice adds nothing.
  ProfileOptions same = base_options();
  same.real_home = "/Users/ada";
  EXPECT_EQ(generate(same), generate(base_options()));
  // And the real home's paths come after $HOME's, without repeats.
  const auto paths = profile_protected_paths(options);
  std::set<std::string> unique;
  for (const auto& p : paths) {
    EXPECT_TRUE(unique.insert(p.path).second) << p.path;
  }
  EXPECT_EQ(unique.count("/Users/ada/.zshrc"), 1u);
  EXPECT_EQ(unique.count("/Users/ada/scratch/.zshrc"), 1u);
}

// Finding 10: a container daemon's socket is unreachable unless listed, whenever it is created:
// Seatbelt matches the path at each connect, so a socket re-created after start is refused too.
TEST(ProfileUnixSockets, ContainerSocketsAreUnreachableUnlessListed) {
  ProfileOptions options = base_options();
  options.ssh_auth_sock = "/private/tmp/com.apple.launchd.abc/Listeners";
  options.allow_unix_socket_folders = {"/Users/ada/.cache/mine"};
  const auto forms = parse(generate(options));
  for (const char* socket :
       {"/Users/ada/.docker/run/docker.sock", "/private/var/run/docker.sock",
        "/var/run/docker.sock", "/Users/ada/.colima/default/docker.sock",
        "/Users/ada/.orbstack/run/docker.sock", "/Users/ada/.rd/docker.sock",
        "/Users/ada/.local/share/containers/podman/machine/podman.sock",
        "/Users/ada/.lima/default/sock/docker.sock", "/private/var/run/mDNSResponder",
        "/private/tmp/tmux-501/default", "/private/tmp/com.apple.launchd.abc/other"}) {
    EXPECT_FALSE(allowed(forms, "network-outbound", socket)) << socket;
  }
  EXPECT_TRUE(allowed(forms, "network-outbound", "/private/tmp/com.apple.launchd.abc/Listeners"));
  EXPECT_TRUE(allowed(forms, "network-outbound", "/Users/ada/.cache/mine/x.sock"));
  // The sockets the command may reach cannot be replaced by one of its own (in /private/tmp,
  // which is writable): the programs outside that connect to them would talk to the command.
  EXPECT_FALSE(allowed(forms, "file-write-unlink", "/private/tmp/com.apple.launchd.abc/Listeners"));
  EXPECT_FALSE(allowed(forms, "file-write-create", "/private/tmp/com.apple.launchd.abc/Listeners"));
  EXPECT_TRUE(allowed(forms, "file-write-create", "/private/tmp/com.apple.launchd.abc/x"));
}

TEST(ProfileUnixSockets, StrictModeChangesNothingOnMacos) {
  ProfileOptions strict = base_options();
  strict.strict_unix_sockets = true;
  EXPECT_EQ(generate(strict), generate(base_options()));
}

// Item 14: hard links, folders above, case-folded and resolved spellings. A hard link made in a
// writable folder would be a writable name for any file: none at all, after every allow.
TEST(ProfileFiles, HardLinksAreDeniedEverywhere) {
  const auto forms = parse(generate(base_options()));
  const int deny = index_of(forms, "(deny file-link)");
  for (int i = deny + 1; i < static_cast<int>(forms.size()); ++i) {
    EXPECT_FALSE(
        forms[i].items[0].is_symbol("allow") &&
        (forms[i].items[1].is_symbol("file-link") || forms[i].items[1].is_symbol("file-write*")))
        << forms[i].print();
  }
}

TEST(ProfileFiles, FoldersAboveProtectedPathsCannotBeCreatedRenamedOrRemoved) {
  const auto forms = parse(generate(base_options()));
  const int rule = index_starting(forms, "(deny file-write-create file-write-unlink ");
  ASSERT_GE(rule, 0);
  const std::string printed = forms[rule].print();
  for (const char* folder : {"/Users", "/Users/ada", "/Users/ada/.config", "/Users/ada/.ssh",
                             "/Users/ada/.gnupg", "/Users/ada/Library", "/Users/ada/.local",
                             "/private", "/private/var", "/usr/lib", "/Library"}) {
    EXPECT_NE(printed.find(std::string("(literal \"") + folder + "\")"), std::string::npos)
        << folder;
  }
  // A missing ~/.config replaced by a link is the case this exists for; the spelling
  // ~/.CONFIG is the same folder on APFS.
  EXPECT_NE(printed.find("(regex \"^/[uU][sS][eE][rR][sS]/[aA][dD][aA]/\\\\.[cC][oO][nN][fF]"
                         "[iI][gG]$\")"),
            std::string::npos)
      << printed;
  // Folders inside a protected tree need no rule of their own.
  EXPECT_EQ(printed.find("(literal \"/Users/ada/.config/fish"), std::string::npos);
}

TEST(ProfileFiles, CaseFoldedRegexesMatchEverySpellingAndNothingElse) {
  const auto matches = [](const std::string& path, bool tree, const std::string& candidate) {
    return std::regex_search(candidate,
                             std::regex(case_folded_regex(path, tree), std::regex::extended));
  };
  EXPECT_TRUE(matches("/Users/ada/.bash_login", false, "/Users/ada/.bash_login"));
  EXPECT_TRUE(matches("/Users/ada/.bash_login", false, "/users/ADA/.BASH_LOGIN"));
  EXPECT_FALSE(matches("/Users/ada/.bash_login", false, "/Users/ada/xbash_login"));
  EXPECT_FALSE(matches("/Users/ada/.bash_login", false, "/Users/ada/.bash_login2"));
  EXPECT_FALSE(matches("/Users/ada/.bash_login", false, "/Users/ada/.bash_login/x"));
  EXPECT_TRUE(matches("/Users/ada/.ssh/config.d", true, "/Users/ada/.SSH/Config.D"));
  EXPECT_TRUE(matches("/Users/ada/.ssh/config.d", true, "/Users/ada/.ssh/config.d/x"));
  EXPECT_FALSE(matches("/Users/ada/.ssh/config.d", true, "/Users/ada/.ssh/config.dx"));
  EXPECT_TRUE(matches("/a(b)[c]+$^|{d}*?\\e", false, "/A(B)[C]+$^|{D}*?\\E"));
  EXPECT_FALSE(matches("/a.b", false, "/aXb"));
  EXPECT_TRUE(matches("/Users/Zoë", false, "/USERS/ZOë"));  // ASCII only is folded
  // No (?i): AppleMatch reads it as nothing and the rule never matches.
  EXPECT_EQ(generate(base_options()).find("(?i)"), std::string::npos);
}

TEST(ProfileFiles, EveryProtectedPathAlsoHasACaseFoldedRule) {
  ProfileOptions options = base_options();
  const auto forms = parse(generate(options));
  std::set<std::string> regexes;
  for (const auto& form : forms) {
    if (form.items.size() >= 2 && form.items[0].is_symbol("deny") &&
        form.items[1].is_symbol("file-write*")) {
      for (std::size_t i = 2; i < form.items.size(); ++i) {
        if (form.items[i].items.size() == 2 && form.items[i].items[0].is_symbol("regex")) {
          regexes.insert(form.items[i].items[1].text);
        }
      }
    }
  }
  const auto paths = profile_protected_paths(options);
  EXPECT_EQ(regexes.size(), paths.size());
  for (const auto& p : paths) {
    EXPECT_EQ(regexes.count(case_folded_regex(p.path, p.tree)), 1u) << p.path;
  }
}

TEST(ProfileFiles, ResolvedSpellingsTheRepositoryPathAndOwnExecutablesAreProtected) {
  ProfileOptions options = base_options();
  options.working_directory = "/Users/ada/src/app";
  options.git_dirs = {"/Users/ada/src/app/.git"};
  options.path_entries = {"/opt/homebrew/bin", "/Users/ada/src/app/node_modules/.bin"};
  options.own_executables = {"/opt/sandgate/bin/sandgate"};
  options.resolved_spellings = {{"/Users/ada/dotfiles/zshrc", false, false},
                                {"/Users/ada/.zshrc", false, false}};  // already listed
  const std::string text = generate(options);
  for (const char* filter :
       {"(literal \"/Users/ada/dotfiles/zshrc\")", "(subpath \"/Users/ada/src/app/.git/hooks\")",
        "(literal \"/Users/ada/src/app/.git/config\")", "(subpath \"/opt/homebrew/bin\")",
        "(literal \"/opt/sandgate/bin/sandgate\")", "(literal \"/Users/ada/.gitconfig\")",
        "(subpath \"/Users/ada/.config/git\")", "(literal \"/Users/ada/.ssh/authorized_keys\")",
        "(literal \"/Users/ada/.gnupg/gpg-agent.conf\")", "(subpath \"/private/var/at\")"}) {
    EXPECT_NE(text.find(filter), std::string::npos) << filter;
  }
  EXPECT_EQ(text.find("node_modules"), std::string::npos);
  std::size_t count = 0;
  for (auto at = text.find("(literal \"/Users/ada/.zshrc\")"); at != std::string::npos;
       at = text.find("(literal \"/Users/ada/.zshrc\")", at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 1u) << "once, in the write rule";
  // ~/.ssh and ~/.gnupg themselves stay writable (known_hosts, locks, agent sockets).
  EXPECT_EQ(text.find("(subpath \"/Users/ada/.ssh\")"), std::string::npos);
  EXPECT_EQ(text.find("(subpath \"/Users/ada/.gnupg\")"), std::string::npos);
}

// Item 15: HOME=/ gives a valid profile.
TEST(ProfileFiles, RootHomeGivesAValidProfile) {
  ProfileOptions options = base_options("/");
  options.gate_files = {"/.config/goose/sandbox/blocked.txt"};
  auto profile = generate_profile(options);
  ASSERT_TRUE(profile) << profile.error();
  auto forms = read_sbpl(*profile);
  ASSERT_TRUE(forms);
  EXPECT_EQ(testing::check_sbpl(*forms), "");
  EXPECT_EQ(profile->find("\"//"), std::string::npos);
  EXPECT_NE(profile->find("(literal \"/.zshrc\")"), std::string::npos);
}

// Item 14: the profile goes to sandbox-exec inline, never through a file.
TEST(ProfileLaunch, SandboxExecGetsTheProfileInline) {
  auto argv = sandbox_exec_argv(base_options());
  ASSERT_TRUE(argv) << argv.error();
  ASSERT_EQ(argv->size(), 3u);
  EXPECT_EQ((*argv)[0], "/usr/bin/sandbox-exec");
  EXPECT_EQ((*argv)[1], "-p");
  EXPECT_EQ((*argv)[2], generate(base_options()));
  ProfileOptions bad = base_options("relative");
  EXPECT_FALSE(sandbox_exec_argv(bad));
}

// --- round trips ---------------------------------------------------------------------------

// Every string in the profile reads back as the path meant: the profile for an awkward home is
// the profile for a plain one with the home swapped, form for form, once parsed.
TEST(ProfileRoundTrip, AwkwardHomeFoldersReadBackExactly) {
  const std::string plain = "/Users/plain";
  const std::vector<std::string> homes = {
      "/Users/ada lovelace", "/Users/o\"brien",     "/Users/back\\slash",
      "/Users/\\\"",         "/Users/zoë",          "/Users/日本語",
      "/Users/a(b)c;d",      "/Users/#\"x\"",       "/Users/tab-free but  two  spaces",
      "/Users/emoji-🙂",   "/Users/trailing\\\\", "/Users/\"(deny default)\""};
  for (const auto& home : homes) {
    SCOPED_TRACE(home);
    ProfileOptions awkward = base_options(home);
    awkward.strict_unix_sockets = true;
    awkward.ssh_auth_sock = home + "/agent \"sock\"";
    awkward.allow_unix_sockets = {home + "/x\\y.sock"};
    ProfileOptions reference = base_options(plain);
    reference.strict_unix_sockets = true;
    reference.ssh_auth_sock = plain + "/agent \"sock\"";
    reference.allow_unix_sockets = {plain + "/x\\y.sock"};

    auto forms = parse(generate(awkward));
    EXPECT_EQ(testing::check_sbpl(forms), "");
    auto expected = parse(generate(reference));
    ASSERT_EQ(forms.size(), expected.size());
    // Swap the home back in every string, then the two profiles must be the same forms.
    // Regex filters hold the home case-folded; they are checked on their own (case folding and
    // check_sbpl) and left out here.
    std::function<void(Sexp&)> swap_home = [&](Sexp& form) {
      if (form.kind == Sexp::Kind::string && form.text.starts_with(home)) {
        form.text = plain + form.text.substr(home.size());
      }
      std::erase_if(form.items, [](const Sexp& item) {
        return item.items.size() == 2 && item.items[0].is_symbol("regex") &&
               item.items[1].kind == Sexp::Kind::string;
      });
      for (auto& item : form.items) {
        swap_home(item);
      }
    };
    for (auto& form : forms) {
      swap_home(form);
    }
    for (auto& form : expected) {
      swap_home(form);  // only drops its regexes: no string starts with the awkward home
    }
    for (std::size_t i = 0; i < forms.size(); ++i) {
      EXPECT_EQ(forms[i].print(), expected[i].print()) << "form " << i;
    }
  }
}

// The protected paths in the profile are exactly protected_paths(), each as literal or subpath.
TEST(ProfileRoundTrip, ProtectedPathsAppearExactlyOnce) {
  const std::string home = "/Users/Zoë \"Q\" O\\Brien";
  const auto forms = parse(generate(base_options(home)));
  std::multiset<std::string> seen;
  for (const auto& form : forms) {
    if (form.items.size() >= 2 && form.items[0].is_symbol("deny") &&
        form.items[1].is_symbol("file-write*")) {
      testing::for_each_path_filter(std::vector<Sexp>{form},
                                    [&](const std::string& filter, const std::string& path) {
                                      seen.insert(filter + " " + path);
                                    });
    }
  }
  std::multiset<std::string> expected;
  for (const auto& p : profile_protected_paths(base_options(home))) {
    expected.insert((p.tree ? "subpath " : "literal ") + p.path);
  }
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(seen.count("literal " + home + "/.ssh/config"), 1u);
  EXPECT_EQ(seen.count("literal " + home + "/.zshenv"), 1u);
  EXPECT_EQ(seen.count("subpath " + home + "/Library/LaunchAgents"), 1u);
}

// --- what each toggle and flag changes ------------------------------------------------------

TEST(ProfileToggles, ProtectFilesOffKeepsOnlyTheGatesConfiguration) {
  ProfileOptions off = base_options();
  off.protect_files = false;
  const auto d = diff(generate(base_options()), generate(off));
  // Removed: the protect_files denial, and the folder rules shrink (~/.ssh and the system
  // folders were only there for the protected paths); the autostart places, protected always,
  // join the gate's configuration.
  const auto removed_writes = std::find_if(d.removed.begin(), d.removed.end(), [](auto& r) {
    return r.starts_with("(deny file-write* ");
  });
  ASSERT_NE(removed_writes, d.removed.end());
  for (const char* path :
       {"/.ssh/config\"", "/.gnupg/gpg.conf\"", "/.bashrc\"", "/.zshenv\"", "/.config/fish\"",
        "/.config/goose\"", "/.gitconfig\"", "/.local/bin\""}) {
    EXPECT_NE(removed_writes->find(std::string("\"/Users/ada") + path), std::string::npos) << path;
  }
  for (const auto& added : d.added) {
    EXPECT_TRUE(
        added.starts_with("(deny file-write-create file-write-unlink ") ||
        added.starts_with("(deny file-write-unlink ") ||
        added.starts_with("(deny file-write*\n    (subpath \"/Users/ada/.config/sandgate\")") ||
        added.starts_with("(deny file-write* (subpath \"/Users/ada/.config/sandgate\")"))
        << added;
  }
  const auto forms = parse(generate(off));
  EXPECT_FALSE(allowed(forms, "file-write-data", "/Users/ada/Library/LaunchAgents/x.plist"));
  // The gate's configuration stays protected.
  const std::string text = generate(off);
  EXPECT_NE(text.find("(subpath \"/Users/ada/.config/sandgate\")"), std::string::npos);
  EXPECT_NE(text.find("(subpath \"/Users/ada/.config/goose/sandbox\")"), std::string::npos);
}

TEST(ProfileToggles, BlockRawSocketsOffRemovesExactlyTheTwoRawSocketRules) {
  ProfileOptions off = base_options();
  off.block_raw_sockets = false;
  const auto d = diff(generate(base_options()), generate(off));
  EXPECT_TRUE(d.added.empty());
  ASSERT_EQ(d.removed.size(), 2u);
  EXPECT_EQ(d.removed[0],
            "(deny system-socket (require-all (socket-domain AF_INET) (socket-type SOCK_RAW)))");
  EXPECT_EQ(d.removed[1],
            "(deny system-socket (require-all (socket-domain AF_INET6) (socket-type SOCK_RAW)))");
}

TEST(ProfileToggles, BlockTunnelingOffRemovesExactlyTheExecRule) {
  ProfileOptions off = base_options();
  off.block_tunneling = false;
  const auto d = diff(generate(base_options()), generate(off));
  EXPECT_TRUE(d.added.empty());
  ASSERT_EQ(d.removed.size(), 1u);
  EXPECT_EQ(d.removed[0], "(deny process-exec (regex #\"/(nc|ncat|netcat|socat|telnet)$\"))");
}

TEST(ProfileFlags, EachFlagAddsItsRules) {
  ProfileOptions flags = base_options();
  flags.allow_localhost_ports = {5432};
  flags.allow_inbound_ports = {3000};
  flags.allow_unix_sockets = {"/tmp/x.sock"};
  auto d = diff(generate(base_options()), generate(flags));
  EXPECT_TRUE(d.removed.empty());
  const std::multiset<std::string> added(d.added.begin(), d.added.end());
  EXPECT_EQ(added,
            (std::multiset<std::string>{"(allow network-outbound (remote tcp \"localhost:5432\"))",
                                        "(allow network-bind (local tcp \"localhost:3000\"))",
                                        "(allow network-inbound (local tcp \"localhost:3000\"))",
                                        "(allow network-outbound (remote tcp \"localhost:3000\"))",
                                        "(allow network-outbound (remote unix-socket (path-literal "
                                        "\"/tmp/x.sock\")))"}));
}

// Item 15: --allow-local-bind is opt-in: the command's own servers on any local port.
TEST(ProfileFlags, LocalBindIsOptInAndStaysOnLocalhost) {
  ProfileOptions local = base_options();
  local.allow_local_bind = true;
  const auto d = diff(generate(base_options()), generate(local));
  EXPECT_TRUE(d.removed.empty());
  const std::multiset<std::string> added(d.added.begin(), d.added.end());
  EXPECT_EQ(added,
            (std::multiset<std::string>{"(allow network-bind (local tcp \"localhost:*\"))",
                                        "(allow network-inbound (local tcp \"localhost:*\"))",
                                        "(allow network-outbound (remote tcp \"localhost:*\"))"}));
  EXPECT_EQ(generate(local).find("\"*:"), std::string::npos) << "never any host";
}

TEST(ProfileFlags, AGateOnAUnixSocketNeedsNoPort) {
  ProfileOptions options = base_options();
  options.proxy_port = 0;
  options.gate_unix_socket = "/Users/ada/.config/sandgate/gate.sock";
  const std::string text = generate(options);
  EXPECT_NE(text.find("(allow network-outbound (remote unix-socket (path-literal "
                      "\"/Users/ada/.config/sandgate/gate.sock\")))"),
            std::string::npos);
  EXPECT_EQ(text.find("(remote ip"), std::string::npos);
}

TEST(ProfileFlags, GateFilesOutsideTheProtectedFoldersAreProtectedOneByOne) {
  ProfileOptions options = base_options();
  options.gate_files.push_back("/etc/sandgate/blocked.txt");
  options.protect_files = false;
  const std::string text = generate(options);
  EXPECT_NE(text.find("(literal \"/etc/sandgate/blocked.txt\")"), std::string::npos);
  // The default blocklist lies under ~/.config/goose/sandbox: not repeated.
  EXPECT_EQ(text.find("(literal \"/Users/ada/.config/goose/sandbox/blocked.txt\")"),
            std::string::npos);
}

// --- refusals --------------------------------------------------------------------------------

TEST(ProfileErrors, UnrepresentableHomeFoldersAreErrorsNamingTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/Users/a\nb", "control character"},
      {std::string("/Users/a\0b", 10), "NUL"},
      {"/Users/a\x1b[31m", "control character"},
      {"/Users/a\x7f", "control character"},
      {"/Users/a\tb", "control character"},
      {"/Users/\xff\xfe", "not valid UTF-8"},
      {"/Users/\xc3", "not valid UTF-8"},
      {"/Users/\xc0\xaf", "not valid UTF-8"},      // overlong '/'
      {"/Users/\xed\xa0\x80", "not valid UTF-8"},  // a UTF-16 surrogate
      {"Users/ada", "not absolute"},
      {"", "empty"},
      {"/Users/ada/", "normal form"},
      {"/Users//ada", "normal form"},
      {"/Users/../ada", "normal form"},
      {"/Users/./ada", "normal form"},
  };
  for (const auto& [home, problem] : cases) {
    ProfileOptions options = base_options(home);
    options.gate_files.clear();
    auto profile = generate_profile(options);
    ASSERT_FALSE(profile) << "accepted home " << home;
    EXPECT_NE(profile.error().find("home folder"), std::string::npos) << profile.error();
    EXPECT_NE(profile.error().find(problem), std::string::npos) << profile.error();
    // The message itself is printable: no raw control characters.
    for (char c : profile.error()) {
      EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << profile.error();
    }
  }
}

TEST(ProfileErrors, UnrepresentableFlagsAndGateFilesNameTheirSource) {
  ProfileOptions socket = base_options();
  socket.allow_unix_sockets = {"/tmp/a\nb.sock"};
  auto profile = generate_profile(socket);
  ASSERT_FALSE(profile);
  EXPECT_NE(profile.error().find("--allow-unix-socket '/tmp/a\\x0ab.sock'"), std::string::npos)
      << profile.error();

  ProfileOptions gate = base_options();
  gate.gate_files = {"relative/blocked.txt"};
  profile = generate_profile(gate);
  ASSERT_FALSE(profile);
  EXPECT_NE(profile.error().find("gate file 'relative/blocked.txt' is not absolute"),
            std::string::npos)
      << profile.error();

  ProfileOptions agent = base_options();
  agent.strict_unix_sockets = true;
  agent.ssh_auth_sock = "/tmp/\x01";
  profile = generate_profile(agent);
  ASSERT_FALSE(profile);
  EXPECT_NE(profile.error().find("SSH_AUTH_SOCK"), std::string::npos) << profile.error();

  ProfileOptions no_port = base_options();
  no_port.proxy_port = 0;
  EXPECT_FALSE(generate_profile(no_port));

  ProfileOptions bad_socket = base_options();
  bad_socket.gate_unix_socket = "gate.sock";
  profile = generate_profile(bad_socket);
  ASSERT_FALSE(profile);
  EXPECT_NE(profile.error().find("the gate's socket 'gate.sock' is not absolute"),
            std::string::npos)
      << profile.error();
}

}  // namespace
}  // namespace sandgate::sandbox
