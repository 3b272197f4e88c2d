// End-to-end tests of `sandgate check`: the real executable, run with a controlled environment
// (HOME is a fresh temporary folder; every GOOSE_*, SANDGATE_* and LAUNCHDARKLY_* variable of the
// caller is removed) and real files, asserting exit codes, reason codes and rule locations.
//
//   exit 0: allowed, 1: denied, 2: usage or configuration error
//   stdout: `allow|deny HOST:PORT`, `reason: CODE`, `rule: FILE:LINE ENTRY` or `rule: (none)`,
//           `why: SENTENCE`
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "proxy/settings/load.hpp"
#include "proxy/settings/settings.hpp"
#include "tests/fakes/fake_dns_server.hpp"
#include "tests/fakes/fake_launchdarkly.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const std::string kSandgate = std::string(SANDGATE_BINARY_DIR) + "/bin/sandgate";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;

  // The value of the first stdout line starting with `prefix` ("reason: " ...), or nothing.
  std::optional<std::string> line(std::string_view prefix) const {
    std::istringstream lines(out);
    for (std::string l; std::getline(lines, l);) {
      if (l.starts_with(prefix)) {
        return l.substr(prefix.size());
      }
    }
    return std::nullopt;
  }
  std::string first_line() const { return out.substr(0, out.find('\n')); }
};

// A temporary HOME, the files in it, and runs of the executable with only the variables given.
class Sandbox {
 public:
  Sandbox() {
    std::string pattern = (fs::temp_directory_path() / "sandgate-e2e-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp failed";
    }
    root_ = pattern;
    home_ = root_ + "/home";
    fs::create_directories(home_);
  }
  ~Sandbox() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  const std::string& home() const { return home_; }
  std::string default_blocklist() const { return home_ + "/.config/goose/sandbox/blocked.txt"; }

  // `{home}` and `{blocklist}` in test text stand for this sandbox's paths.
  std::string expand(std::string_view text) const {
    return replace_all(replace_all(std::string(text), "{blocklist}", default_blocklist()), "{home}",
                       home_);
  }

  std::string write(const std::string& relative, const std::string& text) const {
    const fs::path path = fs::path(home_) / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }

  RunResult run(const std::vector<std::string>& args,
                const std::map<std::string, std::string>& env = {}) const {
    // The caller's environment minus anything that configures sandgate, plus HOME and `env`.
    std::vector<std::string> environment;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view entry(*e);
      if (entry.starts_with("GOOSE_") || entry.starts_with("SANDGATE_") ||
          entry.starts_with("LAUNCHDARKLY_") || entry.starts_with("HOME=")) {
        continue;
      }
      // A variable the test sets replaces the caller's (getenv would find the first).
      if (env.contains(std::string(entry.substr(0, entry.find('='))))) {
        continue;
      }
      environment.emplace_back(entry);
    }
    environment.push_back("HOME=" + home_);
    for (const auto& [name, value] : env) {
      environment.push_back(name + "=" + expand(value));
    }
    std::vector<std::string> argv_text = {kSandgate};
    for (const auto& arg : args) {
      argv_text.push_back(expand(arg));
    }
    std::vector<char*> argv;
    for (auto& a : argv_text) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (auto& e : environment) {
      envp.push_back(e.data());
    }
    envp.push_back(nullptr);

    const std::string out_path = root_ + "/stdout";
    const std::string err_path = root_ + "/stderr";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
    pid_t pid = 0;
    const int rc =
        posix_spawn(&pid, kSandgate.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    RunResult result;
    if (rc != 0) {
      ADD_FAILURE() << "posix_spawn " << kSandgate << ": " << std::strerror(rc);
      return result;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = read_file(out_path);
    result.err = read_file(err_path);
    return result;
  }

 private:
  std::string root_;
  std::string home_;
};

std::string describe(const RunResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

// The blocklist used by the table: inline comments, IDN in both spellings, port scope, `*.`.
constexpr std::string_view kBlocklist =
    "# my blocklist\n"
    "evil.com   # blocks evil.com and *.evil.com\n"
    "bücher.example\n"
    "XN--VIL-9LA.COM.\n"
    "pastebin.com:443   # only HTTPS\n"
    "*.tracker.example\n";

struct CheckCase {
  std::string name;
  std::vector<std::string> args;  // after the executable; `{home}` and `{blocklist}` expand
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> files;  // relative to HOME
  int exit_code;
  std::string first_line;  // "" when not asserted
  std::string reason;
  std::string rule;  // "(none)" or "{blocklist}:2 evil.com"
};

std::vector<CheckCase> check_cases() {
  const std::map<std::string, std::string> blocklist = {
      {".config/goose/sandbox/blocked.txt", std::string(kBlocklist)}};
  return {
      // --- Authorities that smuggle a second host are refused before any rule ---
      {"userinfo",
       {"check", "evil.com@github.com:22"},
       {},
       {},
       1,
       "deny evil.com@github.com:22",
       "invalid-host",
       "(none)"},
      {"path",
       {"check", "github.com/.attacker.example:22"},
       {},
       {},
       1,
       "",
       "invalid-host",
       "(none)"},
      {"percent_nul",
       {"check", "github.com%00.evil.com:443"},
       {},
       {},
       1,
       "",
       "invalid-host",
       "(none)"},
      {"backslash", {"check", "github.com\\.evil.com:22"}, {}, {}, 1, "", "invalid-host", "(none)"},
      {"port_leading_zero", {"check", "example.com:022"}, {}, {}, 1, "", "invalid-host", "(none)"},
      {"port_zero", {"check", "example.com:0"}, {}, {}, 1, "", "invalid-host", "(none)"},
      {"port_too_big", {"check", "example.com:65536"}, {}, {}, 1, "", "invalid-host", "(none)"},
      {"bad_ipv4", {"check", "1.2.3.256"}, {}, {}, 1, "", "invalid-host", "(none)"},
      // --- Loopback in every spelling (blocked by default, unlike goose) ---
      {"loopback_short",
       {"check", "127.1:80"},
       {},
       {},
       1,
       "deny 127.0.0.1:80",
       "loopback",
       "(none)"},
      {"loopback_integer",
       {"check", "2130706433:80"},
       {},
       {},
       1,
       "deny 127.0.0.1:80",
       "loopback",
       "(none)"},
      {"loopback_hex_default_port",
       {"check", "0x7f.1"},
       {},
       {},
       1,
       "deny 127.0.0.1:443",
       "loopback",
       "(none)"},
      {"loopback_octal",
       {"check", "0177.0.0.1:22"},
       {},
       {},
       1,
       "deny 127.0.0.1:22",
       "loopback",
       "(none)"},
      {"loopback_mapped",
       {"check", "[::ffff:127.0.0.1]:443"},
       {},
       {},
       1,
       "deny [::ffff:127.0.0.1]:443",
       "loopback",
       "(none)"},
      {"loopback_nat64", {"check", "[64:ff9b::7f00:1]:80"}, {}, {}, 1, "", "loopback", "(none)"},
      {"loopback_6to4", {"check", "[2002:7f00:1::]:80"}, {}, {}, 1, "", "loopback", "(none)"},
      {"loopback_v6", {"check", "[::1]:80"}, {}, {}, 1, "deny [::1]:80", "loopback", "(none)"},
      {"unspecified_v4",
       {"check", "0.0.0.0:80"},
       {},
       {},
       1,
       "deny 0.0.0.0:80",
       "loopback",
       "(none)"},
      {"unspecified_v6_bare", {"check", "::"}, {}, {}, 1, "deny [::]:443", "loopback", "(none)"},
      {"localhost",
       {"check", "localhost:8080"},
       {},
       {},
       1,
       "deny localhost:8080",
       "loopback",
       "(none)"},
      {"localhost_sub_case_dot",
       {"check", "App.LocalHost.:3000"},
       {},
       {},
       1,
       "deny app.localhost:3000",
       "loopback",
       "(none)"},
      {"loopback_allowed_by_flag",
       {"check", "localhost:8080", "--block-loopback=false"},
       {},
       {},
       0,
       "allow localhost:8080",
       "allowed",
       "(none)"},
      {"loopback_allowed_by_env",
       {"check", "localhost:8080"},
       {{"GOOSE_SANDBOX_BLOCK_LOOPBACK", "false"}},
       {},
       0,
       "",
       "allowed",
       "(none)"},
      {"loopback_allowed_literal_is_ip",
       {"check", "127.0.0.1:8080"},
       {{"GOOSE_SANDBOX_BLOCK_LOOPBACK", "0"}},
       {},
       1,
       "",
       "ip-address",
       "(none)"},
      // --- IP literals ---
      {"ip_denied", {"check", "8.8.8.8"}, {}, {}, 1, "deny 8.8.8.8:443", "ip-address", "(none)"},
      {"ip_allowed_env",
       {"check", "8.8.8.8"},
       {{"GOOSE_SANDBOX_ALLOW_IP", "true"}},
       {},
       0,
       "allow 8.8.8.8:443",
       "allowed",
       "(none)"},
      {"ip_allowed_integer_spelling",
       {"check", "134744072:53", "--allow-ip"},
       {},
       {},
       0,
       "allow 8.8.8.8:53",
       "allowed",
       "(none)"},
      {"metadata_ip",
       {"check", "169.254.169.254:80", "--allow-ip"},
       {},
       {},
       1,
       "",
       "metadata-address",
       "(none)"},
      {"metadata_hex",
       {"check", "0xa9fea9fe:80", "--allow-ip"},
       {},
       {},
       1,
       "deny 169.254.169.254:80",
       "metadata-address",
       "(none)"},
      {"metadata_6to4",
       {"check", "[2002:a9fe:a9fe::]:80", "--allow-ip"},
       {},
       {},
       1,
       "",
       "metadata-address",
       "(none)"},
      {"metadata_allowed",
       {"check", "169.254.169.254:80", "--allow-ip", "--allow-metadata"},
       {},
       {},
       0,
       "",
       "allowed",
       "(none)"},
      {"metadata_name",
       {"check", "metadata.google.internal"},
       {},
       {},
       1,
       "",
       "metadata-address",
       "(none)"},
      {"metadata_name_allowed",
       {"check", "metadata.google.internal"},
       {{"SANDGATE_ALLOW_METADATA", "yes"}},
       {},
       0,
       "",
       "allowed",
       "(none)"},
      {"private_allowed",
       {"check", "10.0.0.1:80", "--allow-ip"},
       {},
       {},
       0,
       "",
       "allowed",
       "(none)"},
      {"private_blocked",
       {"check", "10.0.0.1:80", "--allow-ip", "--block-private"},
       {},
       {},
       1,
       "",
       "private-address",
       "(none)"},
      {"private_mapped_blocked",
       {"check", "[::ffff:192.168.1.1]:80"},
       {{"GOOSE_SANDBOX_ALLOW_IP", "1"}, {"SANDGATE_BLOCK_PRIVATE", "on"}},
       {},
       1,
       "",
       "private-address",
       "(none)"},
      {"multicast",
       {"check", "224.0.0.1:80", "--allow-ip"},
       {},
       {},
       1,
       "",
       "reserved-address",
       "(none)"},
      // --- SSH ports ---
      {"ssh_git_host",
       {"check", "github.com:22"},
       {},
       {},
       0,
       "allow github.com:22",
       "allowed",
       "(none)"},
      {"ssh_git_subdomain", {"check", "ssh.github.com:22"}, {}, {}, 0, "", "allowed", "(none)"},
      {"ssh_git_host_case_dot",
       {"check", "GitHub.COM.:7999"},
       {},
       {},
       0,
       "allow github.com:7999",
       "allowed",
       "(none)"},
      {"ssh_non_git_host",
       {"check", "example.com:22"},
       {},
       {},
       1,
       "deny example.com:22",
       "ssh-non-git-host",
       "(none)"},
      {"ssh_git_host_as_prefix",
       {"check", "github.com.evil.com:2222"},
       {},
       {},
       1,
       "",
       "ssh-non-git-host",
       "(none)"},
      {"ssh_disabled",
       {"check", "github.com:22"},
       {{"GOOSE_SANDBOX_ALLOW_SSH", "false"}},
       {},
       1,
       "",
       "ssh-disabled",
       "(none)"},
      {"ssh_custom_git_hosts_replace",
       {"check", "github.com:22"},
       {{"GOOSE_SANDBOX_GIT_HOSTS", " git.corp.example , code.example.org "}},
       {},
       1,
       "",
       "ssh-non-git-host",
       "(none)"},
      {"ssh_custom_git_host",
       {"check", "git.corp.example:7999"},
       {{"GOOSE_SANDBOX_GIT_HOSTS", " git.corp.example , code.example.org "}},
       {},
       0,
       "",
       "allowed",
       "(none)"},
      {"ssh_all_hosts_env",
       {"check", "example.com:22"},
       {{"GOOSE_SANDBOX_SSH_ALL_HOSTS", "true"}},
       {},
       0,
       "",
       "allowed",
       "(none)"},
      {"ssh_all_hosts_flag",
       {"check", "example.com:22", "--ssh-all-hosts"},
       {},
       {},
       0,
       "",
       "allowed",
       "(none)"},
      {"ssh_ports_custom",
       {"check", "example.com:22"},
       {{"SANDGATE_SSH_PORTS", "2200"}},
       {},
       0,
       "",
       "allowed",
       "(none)"},
      // --- Ports ---
      {"port_not_allowed",
       {"check", "example.com:80"},
       {{"SANDGATE_ALLOWED_PORTS", "443"}},
       {},
       1,
       "",
       "port-not-allowed",
       "(none)"},
      {"port_allowed",
       {"check", "example.com:443"},
       {{"SANDGATE_ALLOWED_PORTS", "80, 443"}},
       {},
       0,
       "",
       "allowed",
       "(none)"},
      // --- Blocklist: inline comments, IDN, case, port scope, `*.` ---
      {"blocklist_parent",
       {"check", "api.evil.com"},
       {},
       blocklist,
       1,
       "deny api.evil.com:443",
       "blocklist",
       "{blocklist}:2 evil.com"},
      {"blocklist_case_dot",
       {"check", "EVIL.COM.:80"},
       {},
       blocklist,
       1,
       "deny evil.com:80",
       "blocklist",
       "{blocklist}:2 evil.com"},
      {"blocklist_not_suffix", {"check", "notevil.com"}, {}, blocklist, 0, "", "allowed", "(none)"},
      {"blocklist_idn_entry_punycode_host",
       {"check", "xn--bcher-kva.example"},
       {},
       blocklist,
       1,
       "",
       "blocklist",
       "{blocklist}:3 bücher.example"},
      {"blocklist_idn_entry_unicode_host",
       {"check", "BÜCHER.example"},
       {},
       blocklist,
       1,
       "deny xn--bcher-kva.example:443",
       "blocklist",
       "{blocklist}:3 bücher.example"},
      {"blocklist_punycode_entry_unicode_host",
       {"check", "www.évil.com"},
       {},
       blocklist,
       1,
       "deny www.xn--vil-9la.com:443",
       "blocklist",
       "{blocklist}:4 XN--VIL-9LA.COM."},
      {"blocklist_port_scoped",
       {"check", "pastebin.com:443"},
       {},
       blocklist,
       1,
       "",
       "blocklist",
       "{blocklist}:5 pastebin.com:443"},
      {"blocklist_port_scoped_other_port",
       {"check", "pastebin.com:80"},
       {},
       blocklist,
       0,
       "",
       "allowed",
       "(none)"},
      {"blocklist_wildcard",
       {"check", "a.tracker.example"},
       {},
       blocklist,
       1,
       "",
       "blocklist",
       "{blocklist}:6 *.tracker.example"},
      {"blocklist_wildcard_apex",
       {"check", "tracker.example"},
       {},
       blocklist,
       0,
       "",
       "allowed",
       "(none)"},
      {"blocklist_beats_ssh",
       {"check", "evil.com:22", "--ssh-all-hosts"},
       {},
       blocklist,
       1,
       "",
       "blocklist",
       "{blocklist}:2 evil.com"},
      {"blocklist_flag",
       {"check", "x.evil.org", "--blocklist", "{home}/mine.txt"},
       {},
       {{"mine.txt", "\n\nevil.org\n"}},
       1,
       "",
       "blocklist",
       "{home}/mine.txt:3 evil.org"},
      {"blocklist_env_tilde",
       {"check", "x.evil.org"},
       {{"SANDGATE_BLOCKLIST", "~/mine.txt"}},
       {{"mine.txt", "evil.org\n"}},
       1,
       "",
       "blocklist",
       "{home}/mine.txt:1 evil.org"},
      // --- Allowlist mode ---
      {"allowlist_match",
       {"check", "www.example.com"},
       {{"SANDGATE_ALLOWLIST", "~/allow.txt"}},
       {{"allow.txt", "# ok\nexample.com\n"}},
       0,
       "allow www.example.com:443",
       "allowed",
       "{home}/allow.txt:2 example.com"},
      {"allowlist_miss",
       {"check", "other.org"},
       {{"SANDGATE_ALLOWLIST", "~/allow.txt"}},
       {{"allow.txt", "example.com\n"}},
       1,
       "",
       "not-allowlisted",
       "(none)"},
      {"allowlist_blocklist_wins",
       {"check", "evil.com"},
       {{"SANDGATE_ALLOWLIST", "~/allow.txt"}},
       {{"allow.txt", "evil.com\n"}, {".config/goose/sandbox/blocked.txt", "evil.com\n"}},
       1,
       "",
       "blocklist",
       "{blocklist}:1 evil.com"},
      // --- Config file, and precedence: flag > environment > file > default ---
      {"config_flag",
       {"check", "8.8.8.8", "--config", "{home}/cfg.toml"},
       {},
       {{"cfg.toml", "allow_ip = true\n"}},
       0,
       "",
       "allowed",
       "(none)"},
      {"config_flag_tilde",
       {"check", "8.8.8.8", "--config=~/cfg.toml"},
       {},
       {{"cfg.toml", "allow_ip = true\n"}},
       0,
       "",
       "allowed",
       "(none)"},
      {"config_env",
       {"check", "8.8.8.8"},
       {{"SANDGATE_CONFIG", "{home}/cfg.toml"}},
       {{"cfg.toml", "allow_ip = true\n"}},
       0,
       "",
       "allowed",
       "(none)"},
      {"config_blocklist_tilde",
       {"check", "evil.com"},
       {{"SANDGATE_CONFIG", "~/cfg.toml"}},
       {{"cfg.toml", "blocklist = \"~/lists/b.txt\"\n"}, {"lists/b.txt", "evil.com\n"}},
       1,
       "",
       "blocklist",
       "{home}/lists/b.txt:1 evil.com"},
      {"config_git_hosts_array",
       {"check", "git.corp.example:22"},
       {{"SANDGATE_CONFIG", "~/cfg.toml"}},
       {{"cfg.toml", "git_hosts = [\"a.example\", \"GIT.CORP.EXAMPLE.\"]\n"}},
       0,
       "",
       "allowed",
       "(none)"},
      {"precedence_env_beats_file",
       {"check", "8.8.8.8"},
       {{"SANDGATE_CONFIG", "~/cfg.toml"}, {"GOOSE_SANDBOX_ALLOW_IP", "false"}},
       {{"cfg.toml", "allow_ip = true\n"}},
       1,
       "",
       "ip-address",
       "(none)"},
      {"precedence_flag_beats_env",
       {"check", "8.8.8.8", "--allow-ip"},
       {{"SANDGATE_CONFIG", "~/cfg.toml"}, {"GOOSE_SANDBOX_ALLOW_IP", "false"}},
       {{"cfg.toml", "allow_ip = false\n"}},
       0,
       "",
       "allowed",
       "(none)"},
      {"precedence_flag_false_beats_env_true",
       {"check", "8.8.8.8", "--allow-ip=false"},
       {{"GOOSE_SANDBOX_ALLOW_IP", "true"}},
       {},
       1,
       "",
       "ip-address",
       "(none)"},
      {"precedence_empty_env_is_unset",
       {"check", "8.8.8.8"},
       {{"SANDGATE_CONFIG", "~/cfg.toml"}, {"GOOSE_SANDBOX_ALLOW_IP", ""}},
       {{"cfg.toml", "allow_ip = true\n"}},
       0,
       "",
       "allowed",
       "(none)"},
      {"flag_before_subcommand",
       {"--allow-ip", "check", "8.8.8.8"},
       {},
       {},
       0,
       "",
       "allowed",
       "(none)"},
  };
}

TEST(CheckCli, DecisionTable) {
  ASSERT_TRUE(fs::exists(kSandgate)) << kSandgate;
  for (const CheckCase& c : check_cases()) {
    SCOPED_TRACE(c.name);
    Sandbox box;
    for (const auto& [path, text] : c.files) {
      box.write(path, text);
    }
    const RunResult r = box.run(c.args, c.env);
    EXPECT_EQ(r.exit_code, c.exit_code) << describe(r);
    if (!c.first_line.empty()) {
      EXPECT_EQ(r.first_line(), c.first_line) << describe(r);
    } else {
      EXPECT_THAT(r.first_line(), StartsWith(c.exit_code == 0 ? "allow " : "deny "));
    }
    EXPECT_EQ(r.line("reason: "), c.reason) << describe(r);
    EXPECT_EQ(r.line("rule: "), box.expand(c.rule)) << describe(r);
    const auto why = r.line("why: ");
    ASSERT_TRUE(why.has_value()) << describe(r);
    EXPECT_FALSE(why->empty());
    EXPECT_TRUE(why->ends_with(".")) << *why;
  }
}

// `check --resolve`: a fresh lookup through the configured server (a fake on loopback), what the
// cache would keep and for how long, and each address held to the address rules.
TEST(CheckCli, ResolveShowsTheLookupTheCacheAndEachAddress) {
  sandgate::fakes::FakeDnsServer dns;
  dns.set("api.resolve.test", {"93.184.216.34"}, std::chrono::seconds{120});
  dns.set("inside.resolve.test", {"127.0.0.2"}, std::chrono::seconds{600});
  Sandbox box;
  const std::vector<std::string> common = {"check", "--resolve", "--dns-server", dns.endpoint()};
  const auto with = [&common](std::string name) {
    std::vector<std::string> args = common;
    args.push_back(std::move(name));
    return args;
  };

  const RunResult ok = box.run(with("api.resolve.test"));
  EXPECT_EQ(ok.exit_code, 0) << describe(ok);
  EXPECT_EQ(ok.line("hosts file "), "/etc/hosts: (no entry)") << describe(ok);
  EXPECT_EQ(ok.line("dns ("), dns.endpoint() + "): 93.184.216.34 (TTL 120 s)") << describe(ok);
  EXPECT_THAT(ok.line("cache: ").value_or(""), StartsWith("93.184.216.34 for 120 s"));
  EXPECT_EQ(ok.line("address 93.184.216.34: "), "allow (allowed)") << describe(ok);

  // The name is allowed, the address it resolves to is not: a denial, as the gate would deny.
  const RunResult inside = box.run(with("inside.resolve.test"));
  EXPECT_EQ(inside.exit_code, 1) << describe(inside);
  EXPECT_THAT(inside.line("cache: ").value_or(""), StartsWith("127.0.0.2 for 300 s"));
  EXPECT_EQ(inside.line("address 127.0.0.2: "), "deny (loopback)") << describe(inside);

  // No such name: the negative TTL from the SOA, capped by dns_negative_ttl.
  const RunResult missing = box.run(with("missing.resolve.test"));
  EXPECT_EQ(missing.exit_code, 1) << describe(missing);
  EXPECT_EQ(missing.line("dns ("), dns.endpoint() + "): not_found (negative TTL 60 s)");
  EXPECT_THAT(missing.line("cache: ").value_or(""), StartsWith("not_found for 30 s"));

  // Without --resolve nothing is looked up.
  const std::size_t before = dns.total_queries();
  const RunResult plain = box.run({"check", "--dns-server", dns.endpoint(), "api.resolve.test"});
  EXPECT_EQ(plain.exit_code, 0) << describe(plain);
  EXPECT_EQ(plain.line("dns ("), std::nullopt);
  EXPECT_EQ(dns.total_queries(), before);
}

TEST(CheckCli, WhyNamesTheRuleFileAndLine) {
  Sandbox box;
  box.write(".config/goose/sandbox/blocked.txt", std::string(kBlocklist));
  const RunResult r = box.run({"check", "api.evil.com"});
  ASSERT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_EQ(r.line("why: "), "api.evil.com is blocked by the blocklist entry 'evil.com' (" +
                                 box.default_blocklist() + " line 2).");
  const RunResult invalid = box.run({"check", "evil.com@github.com:22"});
  EXPECT_THAT(invalid.line("why: ").value_or(""), HasSubstr("user information ('@') in host"));
}

// The masked credentials bound to a URL's host are named (never a value: check reads none), from
// flags and from the config file's array alike.
TEST(CheckCli, NamesTheMaskedSecretsFilledInForAUrlsHost) {
  Sandbox box;
  box.write("cfg.toml", "secrets = [\"CONFIG_TOKEN=*.example.org\", \"OTHER=other.example\"]\n");
  const RunResult r = box.run({"check", "--config", box.home() + "/cfg.toml", "--secret",
                               "GITHUB_TOKEN=api.github.com,github.com", "--secret",
                               "NPM_TOKEN=registry.npmjs.org", "https://api.github.com/user"});
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_THAT(r.out, HasSubstr("secrets: GITHUB_TOKEN filled in here"));
  EXPECT_THAT(r.out, Not(HasSubstr("NPM_TOKEN")));
  const RunResult config =
      box.run({"check", "--config", box.home() + "/cfg.toml", "https://api.example.org/x"});
  EXPECT_THAT(config.out, HasSubstr("secrets: CONFIG_TOKEN filled in here")) << describe(config);
  const RunResult none = box.run({"check", "--secret", "T=api.github.com", "https://x.org/"});
  EXPECT_THAT(none.out, Not(HasSubstr("secrets:"))) << describe(none);
}

TEST(CheckCli, NamesTheBudgetsThatCountADestination) {
  Sandbox box;
  box.write("budgets.txt",
            "* up=500MB\ngithub.com up=50MB down=2GiB/day requests=5000/hour\n"
            "gitlab.com up=1MB\nbad line here\n");
  const std::string file = box.home() + "/budgets.txt";
  const RunResult r = box.run({"check", "--budgets", file, "https://api.github.com/user"});
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_THAT(r.out, HasSubstr("budget: " + file + ":1 *: up 500 MB per run\n"));
  EXPECT_THAT(r.out, HasSubstr("budget: " + file +
                               ":2 github.com: up 50 MB per run, down 2 GiB per day, 5000 "
                               "requests per hour\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("gitlab.com")));
  EXPECT_THAT(r.err, HasSubstr(file + ":4: skipped 'bad line here'"));
  const RunResult none = box.run({"check", "example.org"});
  EXPECT_THAT(none.out, Not(HasSubstr("budget:"))) << describe(none);
}

// `--mcp-tool NAME URL` explains an MCP call's decision: the line and its message, or the group
// that has no line for it; a bad MCP line is a warning with its file and line.
TEST(CheckCli, ExplainsAnMcpToolCall) {
  Sandbox box;
  box.write("requests.txt",
            "allow mcp.example.com mcp-tool search\n"
            "deny  mcp.example.com mcp-tool delete_*   #! agents never delete\n"
            "allow mcp.example.com mcp-tool\n");
  const std::string file = box.home() + "/requests.txt";
  const RunResult denied = box.run({"check", "--request-rules", file, "--mcp-tool", "delete_repo",
                                    "https://mcp.example.com/mcp"});
  EXPECT_EQ(denied.exit_code, 1) << describe(denied);
  EXPECT_THAT(denied.out, HasSubstr("deny tool delete_repo on mcp.example.com\n"));
  EXPECT_EQ(denied.line("reason: "), "request-denied");
  EXPECT_EQ(denied.line("rule: "), file + ":2 deny  mcp.example.com mcp-tool delete_*");
  EXPECT_THAT(denied.line("why: ").value_or(""), HasSubstr("agents never delete"));
  EXPECT_THAT(denied.out, HasSubstr("inspected: yes"));
  EXPECT_THAT(denied.err, HasSubstr(file + ":3: skipped 'allow mcp.example.com mcp-tool': an MCP "
                                           "rule is: allow|deny HOST mcp-tool NAME-PATTERN"));
  const RunResult allowed = box.run(
      {"check", "--request-rules", file, "--mcp-tool", "search", "https://mcp.example.com/mcp"});
  EXPECT_EQ(allowed.exit_code, 0) << describe(allowed);
  EXPECT_EQ(allowed.line("rule: "), file + ":1 allow mcp.example.com mcp-tool search");
  const RunResult unlisted = box.run(
      {"check", "--request-rules", file, "--mcp-tool", "SEARCH", "https://mcp.example.com/mcp"});
  EXPECT_EQ(unlisted.exit_code, 1) << describe(unlisted);
  EXPECT_EQ(unlisted.line("reason: "), "request-not-allowed");
}

TEST(CheckCli, MissingDefaultBlocklistUsesTheTemplateAndWritesNothing) {
  Sandbox box;
  const RunResult r = box.run({"check", "example.com"});
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_THAT(r.err, HasSubstr(box.default_blocklist()));
  EXPECT_FALSE(fs::exists(box.home() + "/.config")) << "check must not write files";
}

TEST(CheckCli, BadBlocklistLinesAreWarningsWithFileAndLine) {
  Sandbox box;
  box.write(".config/goose/sandbox/blocked.txt", "evil.com\nbad@host.com\n\n*\n");
  const RunResult r = box.run({"check", "evil.com"});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_EQ(r.line("reason: "), "blocklist");
  EXPECT_THAT(r.err, HasSubstr(box.default_blocklist() + ":2: skipped 'bad@host.com': user "
                                                         "information ('@') in host"));
  EXPECT_THAT(r.err, HasSubstr(box.default_blocklist() + ":4: skipped '*'"));
}

// ---- Configuration errors: exit 2, a message naming the variable, flag or file:line ----

struct ErrorCase {
  std::string name;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> files;
  std::string message;  // must appear on stderr; `{home}` expands
};

TEST(CheckCli, ConfigurationErrorsExitTwoAndNameTheirSource) {
  const std::vector<ErrorCase> cases = {
      {"bad_bool_env",
       {"check", "example.com"},
       {{"GOOSE_SANDBOX_ALLOW_IP", "maybe"}},
       {},
       "GOOSE_SANDBOX_ALLOW_IP='maybe': expected a boolean"},
      {"bad_bool_flag",
       {"check", "example.com", "--allow-ip=maybe"},
       {},
       {},
       "--allow-ip='maybe': expected a boolean"},
      {"bad_git_hosts",
       {"check", "example.com"},
       {{"GOOSE_SANDBOX_GIT_HOSTS", "github.com,evil.com@x"}},
       {},
       "GOOSE_SANDBOX_GIT_HOSTS='github.com,evil.com@x': 'evil.com@x': user information"},
      {"bad_ports",
       {"check", "example.com"},
       {{"SANDGATE_ALLOWED_PORTS", "443,0443"}},
       {},
       "SANDGATE_ALLOWED_PORTS='443,0443': '0443' is not a port (1..65535)"},
      {"sdk_key",
       {"check", "example.com"},
       {{"LAUNCHDARKLY_CLIENT_ID", "sdk-123"}},
       {},
       "client-side ID"},
      {"bad_secret",
       {"check", "example.com", "--secret", "TOKEN=127.0.0.1"},
       {},
       {},
       "a secret is bound to host names, not addresses"},
      {"bad_failover",
       {"check", "example.com"},
       {{"GOOSE_SANDBOX_LD_FAILOVER", "open"}},
       {},
       "GOOSE_SANDBOX_LD_FAILOVER='open': expected allow, deny or blocklist"},
      {"remote_listen",
       {"check", "example.com"},
       {{"SANDGATE_LISTEN", "0.0.0.0:9877"}},
       {},
       "listen address 0.0.0.0:9877 is not loopback"},
      {"toml_syntax",
       {"check", "example.com", "--config", "{home}/cfg.toml"},
       {},
       {{"cfg.toml", "allow_ip = true\nblock_loopback = = 1\n"}},
       "{home}/cfg.toml:2:"},
      {"toml_unknown_key",
       {"check", "example.com"},
       {{"SANDGATE_CONFIG", "~/cfg.toml"}},
       {{"cfg.toml", "allow_ip = true\n\nalow_ip = false\n"}},
       "{home}/cfg.toml:3: unknown setting 'alow_ip'"},
      {"toml_bad_value",
       {"check", "example.com"},
       {{"SANDGATE_CONFIG", "~/cfg.toml"}},
       {{"cfg.toml", "# x\nallow_ip = \"maybe\"\n"}},
       "{home}/cfg.toml:2: allow_ip = 'maybe': expected a boolean"},
      {"toml_missing",
       {"check", "example.com", "--config", "{home}/nowhere.toml"},
       {},
       {},
       "{home}/nowhere.toml"},
      {"blocklist_missing",
       {"check", "example.com", "--blocklist", "{home}/missing.txt"},
       {},
       {},
       "blocklist {home}/missing.txt: No such file or directory"},
      {"allowlist_missing",
       {"check", "example.com"},
       {{"SANDGATE_ALLOWLIST", "~/allow.txt"}},
       {},
       "allowlist {home}/allow.txt: No such file or directory"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    Sandbox box;
    for (const auto& [path, text] : c.files) {
      box.write(path, text);
    }
    const RunResult r = box.run(c.args, c.env);
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_THAT(r.err, HasSubstr(box.expand(c.message))) << describe(r);
    EXPECT_EQ(r.line("reason: "), std::nullopt) << "no decision on a configuration error";
  }
}

TEST(CheckCli, ConfigFolderIsAnError) {
  Sandbox box;
  fs::create_directories(box.home() + "/conf.d");
  const RunResult r = box.run({"check", "example.com", "--config", "{home}/conf.d"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(box.home() + "/conf.d"));
}

TEST(CheckCli, UsageErrorsExitTwo) {
  Sandbox box;
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"check"},
           {"check", "example.com", "--frobnicate"},
           {"check", "a.com", "b.com"},
           {"frobnicate"},
           {"check", "example.com", "--threads"},
       }) {
    const RunResult r = box.run(args);
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_EQ(r.line("reason: "), std::nullopt);
  }
}

// ---- --help and --version ----

TEST(CheckCli, HelpListsEverySetting) {
  Sandbox box;
  const RunResult r = box.run({"--help"});
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  const std::string text = r.out + r.err;
  ASSERT_FALSE(sandgate::settings::all_settings().empty());
  for (const auto& info : sandgate::settings::all_settings()) {
    EXPECT_THAT(text, HasSubstr(std::string(info.env))) << info.key;
    EXPECT_THAT(text, HasSubstr(std::string(info.flag))) << info.key;
  }
  EXPECT_THAT(text, HasSubstr("--config"));
  EXPECT_THAT(text, HasSubstr("SANDGATE_CONFIG"));
  EXPECT_THAT(text, HasSubstr("check"));
}

// Each command's --help lists every setting flag too, with its variable and default.
TEST(CheckCli, EveryCommandsHelpListsEverySetting) {
  Sandbox box;
  for (const char* command : {"serve", "check", "run", "profile"}) {
    const RunResult r = box.run({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << describe(r);
    const std::string text = r.out + r.err;
    for (const auto& info : sandgate::settings::all_settings()) {
      EXPECT_THAT(text, HasSubstr(std::string(info.flag))) << command << " " << info.key;
      EXPECT_THAT(text, HasSubstr("[" + std::string(info.env) + ", default " +
                                  std::string(info.default_text) + "]"))
          << command << " " << info.key;
    }
  }
}

TEST(CheckCli, VersionPrintsTheVersion) {
  Sandbox box;
  const RunResult r = box.run({"--version"});
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_THAT(r.out, ::testing::MatchesRegex("sandgate [0-9]+\\.[0-9]+\\.[0-9]+.*\n"));
}

// ---- LaunchDarkly: `check` shows its answer; bad client IDs stop the gate at start-up ----

constexpr const char* kLdClientId = "0123456789abcdef01234567";

std::map<std::string, std::string> launchdarkly_env(const sandgate::fakes::FakeLaunchDarkly& fake,
                                                    std::string failover = "deny") {
  return {{"LAUNCHDARKLY_CLIENT_ID", kLdClientId},
          {"LAUNCHDARKLY_BASE_URI", fake.base_uri()},
          {"SSL_CERT_FILE", fake.ca_file()},
          {"GOOSE_SANDBOX_LD_FAILOVER", failover},
          {"SANDGATE_LD_TIMEOUT", "1"}};
}

TEST(CheckCli, ShowsLaunchDarklysAnswer) {
  Sandbox box;
  sandgate::fakes::FakeLaunchDarkly fake(kLdClientId);
  fake.set_value("allowed.example", "true");
  fake.set_value("denied.example", "false");

  auto allowed = box.run({"check", "allowed.example"}, launchdarkly_env(fake));
  EXPECT_EQ(allowed.exit_code, 0) << describe(allowed);
  EXPECT_EQ(allowed.line("launchdarkly: "),
            "allow (from launchdarkly): LaunchDarkly's flag "
            "'egress-allowlist' is true for allowed.example");

  auto denied = box.run({"check", "denied.example:443"}, launchdarkly_env(fake));
  EXPECT_EQ(denied.exit_code, 1) << describe(denied);
  EXPECT_EQ(denied.first_line(), "deny denied.example:443");
  EXPECT_EQ(denied.line("reason: "), "launchdarkly");
  EXPECT_THAT(denied.err,
              HasSubstr("LaunchDarkly allowlist: flag 'egress-allowlist' asked per domain"));

  // Locally denied hosts are never sent to LaunchDarkly.
  box.write(".config/goose/sandbox/blocked.txt", "blocked.example\n");
  auto blocked = box.run({"check", "blocked.example"}, launchdarkly_env(fake));
  EXPECT_EQ(blocked.line("reason: "), "blocklist");
  EXPECT_FALSE(blocked.line("launchdarkly: ").has_value());
  EXPECT_EQ(fake.evaluations_for("blocked.example"), 0);
}

TEST(CheckCli, ShowsTheFailoverAnswer) {
  Sandbox box;
  sandgate::fakes::FakeLaunchDarkly fake(kLdClientId);
  fake.set_behaviour(sandgate::fakes::FakeLaunchDarkly::Behaviour::status_500);
  auto denied = box.run({"check", "any.example"}, launchdarkly_env(fake, "deny"));
  EXPECT_EQ(denied.exit_code, 1) << describe(denied);
  EXPECT_EQ(denied.line("reason: "), "launchdarkly-unreachable");
  EXPECT_THAT(*denied.line("launchdarkly: "),
              StartsWith("deny (from failover): LaunchDarkly gave "
                         "no answer (LaunchDarkly answered HTTP 500)"));
  auto allowed = box.run({"check", "any.example"}, launchdarkly_env(fake, "blocklist"));
  EXPECT_EQ(allowed.exit_code, 0) << describe(allowed);
  EXPECT_THAT(*allowed.line("launchdarkly: "),
              HasSubstr("failover blocklist: the local rules alone decided"));
}

TEST(CheckCli, WrongLaunchDarklyKeysStopTheGateAtStartUp) {
  Sandbox box;
  const std::string server_key = "sdk-12345678-90ab-cdef-1234-567890abcdef";
  for (const auto& [value, message] : std::vector<std::pair<std::string, std::string>>{
           {server_key,
            "this is a server-side SDK key; the remote allowlist needs the environment's "
            "client-side ID"},
           {"mob-12345678-90ab-cdef-1234-567890abcdef", "this is a mobile key"},
           {"not-an-id", "expected a client-side ID: 24 hex characters"}}) {
    auto r = box.run({"serve", "--listen", "127.0.0.1:0"}, {{"LAUNCHDARKLY_CLIENT_ID", value}});
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_THAT(r.err, HasSubstr("LAUNCHDARKLY_CLIENT_ID="));
    EXPECT_THAT(r.err, HasSubstr(message));
    EXPECT_THAT(r.err, Not(HasSubstr(server_key))) << "a secret key is never echoed whole";
  }
  auto mode = box.run({"serve"}, {{"SANDGATE_LD_MODE", "stream"}});
  EXPECT_EQ(mode.exit_code, 2);
  EXPECT_THAT(mode.err, HasSubstr("SANDGATE_LD_MODE='stream': expected domain or list"));
  auto uri = box.run({"serve"}, {{"LAUNCHDARKLY_BASE_URI", "http://ld.example.com"}});
  EXPECT_EQ(uri.exit_code, 2);
  EXPECT_THAT(uri.err, HasSubstr("plain http is allowed only to a loopback address"));
}

}  // namespace
