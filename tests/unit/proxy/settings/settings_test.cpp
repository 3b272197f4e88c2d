// Unit tests for proxy/settings: where each setting comes from (flag > environment > TOML file >
// default), how every kind of value is checked and how errors name their source, and how
// load_policy() turns the settings into a rules::Policy (template, missing files, bad lines).
//
// Every test runs against a fake environment (a map) and a temporary home folder, so nothing of
// the machine's own environment or home leaks in.
#include "proxy/settings/settings.hpp"
#include "proxy/settings/load.hpp"
#include "proxy/settings/setting_table.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "config/embedded_defaults.hpp"
#include "proxy/settings/policy_loader.hpp"

namespace sandgate::settings {
namespace {

// Endpoints as the settings write them.
std::vector<std::string> texts(const std::vector<TcpEndpoint>& endpoints) {
  std::vector<std::string> out;
  for (const auto& endpoint : endpoints) {
    out.push_back(endpoint.text());
  }
  return out;
}

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : ",") + item;
  }
  return out;
}

std::string join_ports(const std::vector<std::uint16_t>& ports) {
  std::vector<std::string> items;
  for (auto port : ports) {
    items.push_back(std::to_string(port));
  }
  return join(items);
}

unsigned default_threads() { return usable_cpus().count; }

// A temporary home folder, a fake environment and flags; load() reads nothing else.
class SettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "sandgate-settings-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    home_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(home_, ec);
  }

  Sources sources() const {
    Sources s;
    s.flags = flags_;
    s.env = [env = env_](std::string_view name) -> std::optional<std::string> {
      auto it = env.find(std::string(name));
      if (it == env.end()) {
        return std::nullopt;
      }
      return it->second;
    };
    s.home = home_;
    return s;
  }

  // Writes a file under the home folder and returns its absolute path.
  std::string write(const std::string& name, const std::string& text) const {
    const fs::path path = fs::path(home_) / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }

  // Writes `text` as the config file and points --config at it.
  std::string config(const std::string& text) {
    const std::string path = write("sandgate.toml", text);
    flags_["--config"] = path;
    return path;
  }

  Settings ok() const {
    auto loaded = load(sources());
    EXPECT_TRUE(loaded.has_value()) << loaded.error();
    return loaded ? *loaded : Settings{};
  }

  std::string error() const {
    auto loaded = load(sources());
    EXPECT_FALSE(loaded.has_value()) << "loaded although an error was expected";
    return loaded ? std::string() : loaded.error();
  }

  std::string default_blocklist() const { return home_ + "/.config/goose/sandbox/blocked.txt"; }

  std::string home_;
  std::map<std::string, std::string> env_;
  std::map<std::string, std::string, std::less<>> flags_;
};

// ---- Defaults ----

TEST_F(SettingsTest, DefaultsWithNothingGiven) {
  const Settings s = ok();
  const rules::PolicyOptions policy_defaults;
  EXPECT_TRUE(s.policy.block_loopback);
  EXPECT_FALSE(s.policy.allow_ip);
  EXPECT_TRUE(s.policy.allow_ssh);
  EXPECT_FALSE(s.policy.ssh_all_hosts);
  EXPECT_EQ(s.policy.git_hosts, policy_defaults.git_hosts);
  EXPECT_EQ(s.policy.ssh_ports, (std::vector<std::uint16_t>{22, 2222, 7999}));
  EXPECT_TRUE(s.policy.allowed_ports.empty());
  EXPECT_FALSE(s.policy.block_private);
  EXPECT_FALSE(s.policy.allow_metadata);
  EXPECT_EQ(s.blocklist_path, default_blocklist());
  EXPECT_TRUE(s.blocklist_is_default);
  EXPECT_EQ(s.allowlist_path, "");
  EXPECT_TRUE(s.sandbox.protect_files);
  EXPECT_TRUE(s.sandbox.block_raw_sockets);
  EXPECT_TRUE(s.sandbox.block_tunneling);
  EXPECT_EQ(s.launchdarkly_client_id, "");
  EXPECT_EQ(s.ld_failover, LdFailover::allow);
  EXPECT_FALSE(s.ld_failover_given);
  EXPECT_EQ(s.listen.text(), "127.0.0.1:9877");
  EXPECT_FALSE(s.allow_remote_clients);
  EXPECT_EQ(s.threads, default_threads());
  EXPECT_EQ(s.drain.count(), 10);
  EXPECT_TRUE(s.dns_servers.empty());
  EXPECT_EQ(s.dns_timeout.count(), 5);
  EXPECT_EQ(s.head_timeout.count(), 10);
  EXPECT_EQ(s.connect_timeout.count(), 10);
  EXPECT_EQ(s.idle_timeout.count(), 0);
  EXPECT_EQ(s.max_connections, 4096u);
  EXPECT_EQ(s.log_format, LogFormat::text);
  EXPECT_EQ(s.config_path, "");
}

TEST(SettingsTable, NamesAreUniqueAndFollowTheConventions) {
  std::set<std::string_view> keys, flags, envs;
  for (const SettingInfo& info : all_settings()) {
    SCOPED_TRACE(info.key);
    EXPECT_TRUE(keys.insert(info.key).second) << "duplicate key";
    EXPECT_TRUE(flags.insert(info.flag).second) << "duplicate flag";
    EXPECT_TRUE(envs.insert(info.env).second) << "duplicate variable";
    EXPECT_TRUE(info.flag.starts_with("--"));
    EXPECT_FALSE(info.help.empty());
    EXPECT_FALSE(info.default_text.empty());
    EXPECT_TRUE(info.env.starts_with("GOOSE_SANDBOX_") || info.env.starts_with("SANDGATE_") ||
                info.env.starts_with("LAUNCHDARKLY_"));
  }
  // goose's variables keep goose's names.
  for (std::string_view goose : {
           "GOOSE_SANDBOX_ALLOW_IP",
           "GOOSE_SANDBOX_BLOCK_LOOPBACK",
           "GOOSE_SANDBOX_ALLOW_SSH",
           "GOOSE_SANDBOX_GIT_HOSTS",
           "GOOSE_SANDBOX_SSH_ALL_HOSTS",
           "GOOSE_SANDBOX_PROTECT_FILES",
           "GOOSE_SANDBOX_BLOCK_RAW_SOCKETS",
           "GOOSE_SANDBOX_BLOCK_TUNNELING",
           "GOOSE_SANDBOX_LD_FAILOVER",
           "LAUNCHDARKLY_CLIENT_ID",
       }) {
    EXPECT_EQ(envs.count(goose), 1u) << goose;
  }
}

// ---- Precedence: flag > environment > file > default ----

struct PrecedenceCase {
  std::string_view key;
  std::string file_toml;  // the TOML value
  std::string env_value;
  std::string flag_value;
  std::function<std::string(const Settings&)> read;
  std::string at_default, at_file, at_env, at_flag;  // what `read` gives from each source
};

TEST_F(SettingsTest, FlagBeatsEnvironmentBeatsFileBeatsDefault) {
  const std::string home = home_;
  const std::vector<PrecedenceCase> cases = {
      {"allow_ip", "true", "no", "YES",
       [](const Settings& s) { return s.policy.allow_ip ? "true" : "false"; }, "false", "true",
       "false", "true"},
      {"block_loopback", "false", "on", "off",
       [](const Settings& s) { return s.policy.block_loopback ? "true" : "false"; }, "true",
       "false", "true", "false"},
      {"git_hosts", R"(["file.example", "File2.Example."])", " env.example ", "flag.example",
       [](const Settings& s) { return join(s.policy.git_hosts); },
       "github.com,gitlab.com,bitbucket.org,ssh.dev.azure.com", "file.example,file2.example",
       "env.example", "flag.example"},
      {"ssh_ports", "[2201, 2211]", "2202", "2203",
       [](const Settings& s) { return join_ports(s.policy.ssh_ports); }, "22,2222,7999",
       "2201,2211", "2202", "2203"},
      {"listen", R"("127.0.0.1:1001")", "127.0.0.2:1002", "[::1]:1003",
       [](const Settings& s) { return s.listen.text(); }, "127.0.0.1:9877", "127.0.0.1:1001",
       "127.0.0.2:1002", "[::1]:1003"},
      {"drain_seconds", "11", "12", "13",
       [](const Settings& s) { return std::to_string(s.drain.count()); }, "10", "11", "12", "13"},
      {"threads", "3", "5", "7", [](const Settings& s) { return std::to_string(s.threads); },
       std::to_string(default_threads()), "3", "5", "7"},
      {"ld_failover", R"("deny")", "blocklist", "Allow",
       [](const Settings& s) {
         const char* names[] = {"allow", "deny", "blocklist"};
         return std::string(names[static_cast<int>(s.ld_failover)]) +
                (s.ld_failover_given ? " (given)" : "");
       },
       "allow", "deny (given)", "blocklist (given)", "allow (given)"},
      {"blocklist", R"("~/file.txt")", "/env/blocked.txt", "~/flag.txt",
       [](const Settings& s) {
         return s.blocklist_path + (s.blocklist_is_default ? " (default)" : "");
       },
       home + "/.config/goose/sandbox/blocked.txt (default)", home + "/file.txt",
       "/env/blocked.txt", home + "/flag.txt"},
      {"log_format", R"("json")", "text", "JSON",
       [](const Settings& s) { return s.log_format == LogFormat::json ? "json" : "text"; }, "text",
       "json", "text", "json"},
  };
  for (const PrecedenceCase& c : cases) {
    const auto info = std::find_if(all_settings().begin(), all_settings().end(),
                                   [&c](const SettingInfo& i) { return i.key == c.key; });
    ASSERT_NE(info, all_settings().end()) << c.key;
    // Every combination of the three sources.
    for (int mask = 0; mask < 8; ++mask) {
      const bool file = mask & 1, env = mask & 2, flag = mask & 4;
      SCOPED_TRACE(::testing::Message() << c.key << (file ? " file" : "") << (env ? " env" : "")
                                        << (flag ? " flag" : ""));
      env_.clear();
      flags_.clear();
      if (file) {
        config(std::string(c.key) + " = " + c.file_toml + "\n");
      }
      if (env) {
        env_[std::string(info->env)] = c.env_value;
      }
      if (flag) {
        flags_[std::string(info->flag)] = c.flag_value;
      }
      const std::string want = flag ? c.at_flag : env ? c.at_env : file ? c.at_file : c.at_default;
      EXPECT_EQ(c.read(ok()), want);
    }
  }
}

TEST_F(SettingsTest, ConfigFileFromFlagOrVariableAndTheFlagWins) {
  const std::string a = write("a.toml", "drain_seconds = 21\n");
  const std::string b = write("b.toml", "drain_seconds = 22\n");
  env_["SANDGATE_CONFIG"] = b;
  EXPECT_EQ(ok().drain.count(), 22);
  EXPECT_EQ(ok().config_path, b);
  flags_["--config"] = a;
  EXPECT_EQ(ok().drain.count(), 21);
  EXPECT_EQ(ok().config_path, a);
  // `~` in either.
  flags_["--config"] = "~/a.toml";
  EXPECT_EQ(ok().config_path, a);
  flags_.clear();
  env_["SANDGATE_CONFIG"] = "~/b.toml";
  EXPECT_EQ(ok().config_path, b);
}

// ---- Booleans ----

TEST(SettingsParseBool, EverySpellingInAnyCase) {
  for (std::string_view yes : {"true", "TRUE", "True", "tRuE", "1", "yes", "YES", "Yes", "on", "ON",
                               "On", " true ", "\tyes\n"}) {
    EXPECT_EQ(parse_bool(yes), std::optional<bool>(true)) << "'" << yes << "'";
  }
  for (std::string_view no :
       {"false", "FALSE", "False", "fAlSe", "0", "no", "NO", "No", "off", "OFF", "Off", " off "}) {
    EXPECT_EQ(parse_bool(no), std::optional<bool>(false)) << "'" << no << "'";
  }
  for (std::string_view bad : {"", " ", "maybe", "t", "f", "y", "n", "2", "-1", "01", "truee",
                               "yess", "enable", "disabled", "tru e", "null", "none"}) {
    EXPECT_EQ(parse_bool(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST_F(SettingsTest, EveryBooleanSpellingWorksFromEachSource) {
  const std::vector<std::pair<std::string, bool>> spellings = {
      {"true", true},   {"TRUE", true},   {"True", true},   {"1", true},    {"yes", true},
      {"YES", true},    {"Yes", true},    {"on", true},     {"ON", true},   {"On", true},
      {"false", false}, {"FALSE", false}, {"False", false}, {"0", false},   {"no", false},
      {"NO", false},    {"No", false},    {"off", false},   {"OFF", false}, {"Off", false},
  };
  for (const auto& [text, value] : spellings) {
    SCOPED_TRACE(text);
    // The environment, against both a default-false and a default-true setting.
    env_ = {{"GOOSE_SANDBOX_ALLOW_IP", text}, {"GOOSE_SANDBOX_BLOCK_LOOPBACK", text}};
    flags_.clear();
    Settings s = ok();
    EXPECT_EQ(s.policy.allow_ip, value);
    EXPECT_EQ(s.policy.block_loopback, value);
    // A flag.
    env_.clear();
    flags_ = {{"--allow-ssh", text}};
    EXPECT_EQ(ok().policy.allow_ssh, value);
    // A TOML string.
    flags_.clear();
    config("ssh_all_hosts = \"" + text + "\"\n");
    EXPECT_EQ(ok().policy.ssh_all_hosts, value);
  }
  // TOML booleans.
  env_.clear();
  config("allow_ip = true\nblock_loopback = false\n");
  EXPECT_TRUE(ok().policy.allow_ip);
  EXPECT_FALSE(ok().policy.block_loopback);
}

TEST_F(SettingsTest, EveryBooleanSettingIsReachableFromItsVariable) {
  for (const SettingInfo& info : all_settings()) {
    if (!info.boolean) {
      continue;
    }
    SCOPED_TRACE(info.env);
    // `true` and `false` both load (listen stays loopback, so allow_remote_clients is harmless).
    env_ = {{std::string(info.env), "true"}};
    EXPECT_TRUE(load(sources()).has_value());
    env_ = {{std::string(info.env), "false"}};
    EXPECT_TRUE(load(sources()).has_value());
  }
  env_ = {{"GOOSE_SANDBOX_PROTECT_FILES", "false"}, {"GOOSE_SANDBOX_BLOCK_RAW_SOCKETS", "no"},
          {"GOOSE_SANDBOX_BLOCK_TUNNELING", "off"}, {"SANDGATE_BLOCK_PRIVATE", "on"},
          {"SANDGATE_ALLOW_METADATA", "yes"},       {"GOOSE_SANDBOX_SSH_ALL_HOSTS", "1"},
          {"GOOSE_SANDBOX_ALLOW_SSH", "0"}};
  const Settings s = ok();
  EXPECT_FALSE(s.sandbox.protect_files);
  EXPECT_FALSE(s.sandbox.block_raw_sockets);
  EXPECT_FALSE(s.sandbox.block_tunneling);
  EXPECT_TRUE(s.policy.block_private);
  EXPECT_TRUE(s.policy.allow_metadata);
  EXPECT_TRUE(s.policy.ssh_all_hosts);
  EXPECT_FALSE(s.policy.allow_ssh);
}

TEST_F(SettingsTest, BadBooleanNamesTheVariableOrFlagAndTheValue) {
  env_ = {{"GOOSE_SANDBOX_ALLOW_IP", "maybe"}};
  EXPECT_EQ(error(),
            "GOOSE_SANDBOX_ALLOW_IP='maybe': expected a boolean (true/false, 1/0, yes/no, on/off)");
  for (const SettingInfo& info : all_settings()) {
    if (!info.boolean) {
      continue;
    }
    SCOPED_TRACE(info.key);
    env_ = {{std::string(info.env), "maybe"}};
    flags_.clear();
    EXPECT_THAT(error(), StartsWith(std::string(info.env) + "='maybe': expected a boolean"));
    env_.clear();
    flags_ = {{std::string(info.flag), "nah"}};
    EXPECT_THAT(error(), StartsWith(std::string(info.flag) + "='nah': expected a boolean"));
  }
  // Control characters in a value are not echoed raw.
  flags_.clear();
  env_ = {{"GOOSE_SANDBOX_ALLOW_IP", "tr\nue\x1b[0m"}};
  EXPECT_THAT(error(), StartsWith("GOOSE_SANDBOX_ALLOW_IP='tr?ue?[0m': "));
}

TEST_F(SettingsTest, AnEmptyVariableCountsAsUnset) {
  config("allow_ip = true\nlisten = \"127.0.0.1:7001\"\n");
  env_ = {{"GOOSE_SANDBOX_ALLOW_IP", ""}, {"GOOSE_SANDBOX_BLOCK_LOOPBACK", ""},
          {"SANDGATE_LISTEN", ""},        {"GOOSE_SANDBOX_GIT_HOSTS", ""},
          {"LAUNCHDARKLY_CLIENT_ID", ""}, {"SANDGATE_BLOCKLIST", ""}};
  const Settings s = ok();
  EXPECT_TRUE(s.policy.allow_ip);                // the file's value
  EXPECT_TRUE(s.policy.block_loopback);          // the default
  EXPECT_EQ(s.listen.text(), "127.0.0.1:7001");  // the file's value
  EXPECT_EQ(s.policy.git_hosts.size(), 4u);
  EXPECT_EQ(s.launchdarkly_client_id, "");
  EXPECT_TRUE(s.blocklist_is_default);
  // An empty SANDGATE_CONFIG means no config file.
  flags_.clear();
  env_ = {{"SANDGATE_CONFIG", ""}};
  EXPECT_EQ(ok().config_path, "");
}

// ---- Flags ----

TEST_F(SettingsTest, FlagErrorsNameTheFlag) {
  const std::vector<std::pair<std::pair<std::string, std::string>, std::string>> cases = {
      {{"--allowed-ports", "0"}, "--allowed-ports='0': '0' is not a port (1..65535)"},
      {{"--ssh-ports", "22,x"}, "--ssh-ports='22,x': 'x' is not a port (1..65535)"},
      {{"--listen", "localhost:80"},
       "--listen='localhost:80': 'localhost' is not an IPv4 address in dotted form (write IPv6 "
       "as [ADDR]:PORT)"},
      {{"--threads", "0"}, "--threads='0': expected a number of threads, 1..256"},
      {{"--ld-failover", "open"}, "--ld-failover='open': expected allow, deny or blocklist"},
      {{"--git-hosts", "a@b.com"},
       "--git-hosts='a@b.com': 'a@b.com': user information ('@') in host"},
      {{"--drain-seconds", "3601"},
       "--drain-seconds='3601': expected a whole number of seconds, 0..3600"},
      {{"--log-format", "xml"}, "--log-format='xml': expected text or json"},
  };
  for (const auto& [flag, message] : cases) {
    flags_ = {{flag.first, flag.second}};
    EXPECT_EQ(error(), message);
  }
}

// ---- TOML files ----

TEST_F(SettingsTest, TomlSyntaxErrorNamesFileAndLine) {
  const std::string path = config("allow_ip = true\n# a comment\nblock_loopback = = false\n");
  EXPECT_THAT(error(), StartsWith(path + ":3:"));
  config("git_hosts = [\"a.com\"\n");
  EXPECT_THAT(error(), StartsWith(path + ":"));
}

TEST_F(SettingsTest, TomlUnknownKeyNamesFileAndLine) {
  const std::string path = config("allow_ip = true\n\nalow_ssh = false\n");
  EXPECT_EQ(error(), path + ":3: unknown setting 'alow_ssh'");
  // goose's variable names are not TOML keys.
  config("GOOSE_SANDBOX_ALLOW_IP = true\n");
  EXPECT_EQ(error(), path + ":1: unknown setting 'GOOSE_SANDBOX_ALLOW_IP'");
  // A table is an unknown key too, unless it is named like a setting.
  config("[policy]\nallow_ip = true\n");
  EXPECT_EQ(error(), path + ":1: unknown setting 'policy'");
}

TEST_F(SettingsTest, TomlWrongTypeNamesFileLineAndKey) {
  const std::string path = config("# settings\nallow_ip = 1.5\n");
  EXPECT_EQ(error(), path + ":2: allow_ip: expected a string, number, boolean or array of them");
  config("drain_seconds = 1979-05-27\n");
  EXPECT_EQ(error(),
            path + ":1: drain_seconds: expected a string, number, boolean or array of them");
  config("git_hosts = [[\"a.com\"]]\n");
  EXPECT_EQ(error(), path + ":1: git_hosts: expected a string, number, boolean or array of them");
  config("[allow_ip]\nx = 1\n");
  EXPECT_THAT(error(), StartsWith(path + ":1: allow_ip: expected a string"));
  // A number where a boolean belongs is checked like any other value, with its line.
  config("\n\nallow_ip = 5\n");
  EXPECT_EQ(error(),
            path + ":3: allow_ip = '5': expected a boolean (true/false, 1/0, yes/no, on/off)");
  config("drain_seconds = -1\n");
  EXPECT_EQ(error(),
            path + ":1: drain_seconds = '-1': expected a whole number of seconds, 0..3600");
  // Numbers as strings are fine.
  config("drain_seconds = \"15\"\n");
  EXPECT_EQ(ok().drain.count(), 15);
}

TEST_F(SettingsTest, TomlArraysForLists) {
  config(R"(git_hosts = ["a.com", "B.COM."]
allowed_ports = [443, 8443]
ssh_ports = [22]
dns_servers = ["1.1.1.1:53", "[2606:4700:4700::1111]:53"]
)");
  const Settings s = ok();
  EXPECT_THAT(s.policy.git_hosts, ElementsAre("a.com", "b.com"));
  EXPECT_THAT(s.policy.allowed_ports, ElementsAre(443, 8443));
  EXPECT_THAT(s.policy.ssh_ports, ElementsAre(22));
  EXPECT_THAT(texts(s.dns_servers), ElementsAre("1.1.1.1:53", "[2606:4700:4700::1111]:53"));
  // A comma-separated string works as well.
  config("git_hosts = \"x.org, y.org\"\n");
  EXPECT_THAT(ok().policy.git_hosts, ElementsAre("x.org", "y.org"));
  // A bad item names the file, line and the item.
  const std::string path = config("\ngit_hosts = [\"a.com\", \"b..com\"]\n");
  EXPECT_THAT(error(), StartsWith(path + ":2: git_hosts = 'a.com,b..com': 'b..com': "));
  config("allowed_ports = [443, 0]\n");
  EXPECT_EQ(error(), path + ":1: allowed_ports = '443,0': '0' is not a port (1..65535)");
}

TEST_F(SettingsTest, MissingConfigFileIsAnErrorNamingIt) {
  flags_["--config"] = home_ + "/nowhere.toml";
  EXPECT_THAT(error(), HasSubstr(home_ + "/nowhere.toml"));
  flags_.clear();
  env_["SANDGATE_CONFIG"] = "~/also-nowhere.toml";
  EXPECT_THAT(error(), HasSubstr(home_ + "/also-nowhere.toml"));
}

TEST_F(SettingsTest, ConfigPathThatIsAFolderIsAnError) {
  // A folder given as the config file must not load as "no settings": the operator asked for a
  // configuration and would silently run without it.
  fs::create_directories(home_ + "/conf.d");
  flags_["--config"] = home_ + "/conf.d";
  auto loaded = load(sources());
  ASSERT_FALSE(loaded.has_value());
  EXPECT_THAT(loaded.error(), HasSubstr(home_ + "/conf.d"));
}

TEST_F(SettingsTest, TildeIsExpandedInPaths) {
  config(R"(blocklist = "~/lists/blocked.txt"
allowlist = "~"
port_file = "~/run/port"
log_file = "/var/log/~/x.log"
)");
  env_["SANDGATE_LOG_FILE"] = "~other/x.log";  // only `~` and `~/` are this user's home
  const Settings s = ok();
  EXPECT_EQ(s.blocklist_path, home_ + "/lists/blocked.txt");
  EXPECT_FALSE(s.blocklist_is_default);
  EXPECT_EQ(s.allowlist_path, home_);
  EXPECT_EQ(s.port_file, home_ + "/run/port");
  EXPECT_EQ(s.log_file, "~other/x.log");
  env_.clear();
  EXPECT_EQ(ok().log_file, "/var/log/~/x.log");
  env_["SANDGATE_BLOCKLIST"] = "~/env.txt";
  EXPECT_EQ(ok().blocklist_path, home_ + "/env.txt");
}

// ---- Git hosts ----

TEST_F(SettingsTest, GitHostsAreTrimmedNormalisedAndReplaceTheDefaults) {
  env_["GOOSE_SANDBOX_GIT_HOSTS"] = " github.com , GitLab.COM. ,git.corp.example,bücher.example ";
  EXPECT_THAT(ok().policy.git_hosts,
              ElementsAre("github.com", "gitlab.com", "git.corp.example", "xn--bcher-kva.example"));
  env_["GOOSE_SANDBOX_GIT_HOSTS"] = "git.corp.example";
  EXPECT_THAT(ok().policy.git_hosts, ElementsAre("git.corp.example"));
}

TEST_F(SettingsTest, BadGitHostsAreErrorsNamingTheItem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"github.com,evil.com@x",
       "GOOSE_SANDBOX_GIT_HOSTS='github.com,evil.com@x': 'evil.com@x': user information ('@') "
       "in host"},
      {"github.com/x",
       "GOOSE_SANDBOX_GIT_HOSTS='github.com/x': 'github.com/x': path, query or "
       "fragment character in host"},
      {"a.com,,b.com",
       "GOOSE_SANDBOX_GIT_HOSTS='a.com,,b.com': empty item in a comma-separated list"},
      {"a.com,", "GOOSE_SANDBOX_GIT_HOSTS='a.com,': empty item in a comma-separated list"},
      {",a.com", "GOOSE_SANDBOX_GIT_HOSTS=',a.com': empty item in a comma-separated list"},
      {"git hub.com",
       "GOOSE_SANDBOX_GIT_HOSTS='git hub.com': 'git hub.com': whitespace or "
       "control character in host"},
  };
  for (const auto& [value, message] : cases) {
    env_["GOOSE_SANDBOX_GIT_HOSTS"] = value;
    EXPECT_EQ(error(), message);
  }
}

// ---- Port lists ----

TEST_F(SettingsTest, PortListsAreStrict) {
  for (std::string_view var : {"SANDGATE_ALLOWED_PORTS", "SANDGATE_SSH_PORTS"}) {
    SCOPED_TRACE(var);
    auto ports = [this, var](const std::string& value) {
      env_ = {{std::string(var), value}};
      const Settings s = ok();
      return var == "SANDGATE_SSH_PORTS" ? s.policy.ssh_ports : s.policy.allowed_ports;
    };
    EXPECT_THAT(ports("443"), ElementsAre(443));
    EXPECT_THAT(ports(" 80 , 443 "), ElementsAre(80, 443));
    EXPECT_THAT(ports("1,65535"), ElementsAre(1, 65535));
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"0443", "'0443' is not a port (1..65535)"},
        {"00", "'00' is not a port (1..65535)"},
        {"0", "'0' is not a port (1..65535)"},
        {"65536", "'65536' is not a port (1..65535)"},
        {"99999999999", "'99999999999' is not a port (1..65535)"},
        {"-1", "'-1' is not a port (1..65535)"},
        {"+443", "'+443' is not a port (1..65535)"},
        {"0x1bb", "'0x1bb' is not a port (1..65535)"},
        {"4 43", "'4 43' is not a port (1..65535)"},
        {"https", "'https' is not a port (1..65535)"},
        {"443,,80", "empty item in a comma-separated list"},
        {"443,", "empty item in a comma-separated list"},
        {",443", "empty item in a comma-separated list"},
    };
    for (const auto& [value, message] : bad) {
      env_ = {{std::string(var), value}};
      EXPECT_EQ(error(), std::string(var) + "='" + value + "': " + message);
    }
  }
}

// ---- LaunchDarkly ----

TEST_F(SettingsTest, LaunchDarklyClientIdMustBeAClientSideId) {
  env_["LAUNCHDARKLY_CLIENT_ID"] = "5f1e2d3c4b5a69788796a5b4";
  EXPECT_EQ(ok().launchdarkly_client_id, "5f1e2d3c4b5a69788796a5b4");
  env_["LAUNCHDARKLY_CLIENT_ID"] = "5F1E2D3C4B5A69788796A5B4";
  EXPECT_EQ(ok().launchdarkly_client_id, "5F1E2D3C4B5A69788796A5B4");

  env_["LAUNCHDARKLY_CLIENT_ID"] = "sdk-0123abcd-4567-89ef-0123-456789abcdef";
  std::string message = error();
  EXPECT_THAT(message, StartsWith("LAUNCHDARKLY_CLIENT_ID="));
  EXPECT_THAT(message, HasSubstr("server-side SDK key"));
  EXPECT_THAT(message, HasSubstr("client-side ID"));

  env_["LAUNCHDARKLY_CLIENT_ID"] = "mob-0123abcd-4567-89ef-0123-456789abcdef";
  message = error();
  EXPECT_THAT(message, StartsWith("LAUNCHDARKLY_CLIENT_ID="));
  EXPECT_THAT(message, HasSubstr("mobile key"));
  EXPECT_THAT(message, HasSubstr("client-side ID"));

  for (std::string_view bad : {"abc", "5f1e2d3c4b5a69788796a5b", "5f1e2d3c4b5a69788796a5b4a",
                               "5f1e2d3c4b5a69788796a5bg", "5f1e2d3c-4b5a-6978-8796-a5b4"}) {
    env_["LAUNCHDARKLY_CLIENT_ID"] = std::string(bad);
    EXPECT_EQ(error(), "LAUNCHDARKLY_CLIENT_ID='" + std::string(bad) +
                           "': expected a client-side ID: 24 hex characters");
  }
  // The flag names itself.
  env_.clear();
  flags_["--launchdarkly-client-id"] = "sdk-x";
  EXPECT_THAT(error(), StartsWith("--launchdarkly-client-id="));
}

TEST_F(SettingsTest, RejectedSecretKeysAreNotEchoedInFull) {
  // Server-side SDK keys and mobile keys are secrets; a start-up error (printed to the terminal
  // and often into logs) should say what kind of key it is without repeating it.
  const std::string secret = "sdk-0123abcd-4567-89ef-0123-456789abcdef";
  env_["LAUNCHDARKLY_CLIENT_ID"] = secret;
  const std::string message = error();
  EXPECT_EQ(message.find(secret), std::string::npos) << message;
  EXPECT_EQ(message.find("0123abcd-4567"), std::string::npos) << message;
  EXPECT_THAT(message, HasSubstr("server-side SDK key"));
}

TEST_F(SettingsTest, LdFailoverValues) {
  const std::vector<std::pair<std::string, LdFailover>> values = {
      {"allow", LdFailover::allow},         {"deny", LdFailover::deny},
      {"blocklist", LdFailover::blocklist}, {"DENY", LdFailover::deny},
      {"Blocklist", LdFailover::blocklist}, {"ALLOW", LdFailover::allow},
  };
  for (const auto& [text, mode] : values) {
    env_["GOOSE_SANDBOX_LD_FAILOVER"] = text;
    const Settings s = ok();
    EXPECT_EQ(s.ld_failover, mode) << text;
    EXPECT_TRUE(s.ld_failover_given) << text;
  }
  for (std::string_view bad : {"open", "closed", "true", "fail-open", "allowed"}) {
    env_["GOOSE_SANDBOX_LD_FAILOVER"] = std::string(bad);
    EXPECT_EQ(error(), "GOOSE_SANDBOX_LD_FAILOVER='" + std::string(bad) +
                           "': expected allow, deny or blocklist");
  }
  env_.clear();
  EXPECT_FALSE(ok().ld_failover_given);
}

TEST_F(SettingsTest, LaunchDarklyModeFlagCacheAndTimeout) {
  const Settings defaults = ok();
  EXPECT_EQ(defaults.ld_mode, LdMode::domain);
  EXPECT_EQ(defaults.ld_flag, "egress-allowlist");
  EXPECT_EQ(defaults.ld_cache_ttl, std::chrono::seconds(3600));
  EXPECT_EQ(defaults.ld_timeout, std::chrono::milliseconds(5000));
  EXPECT_EQ(defaults.ld_base_uri.text(), "https://clientsdk.launchdarkly.com");
  EXPECT_EQ(defaults.ld_stream_uri.text(), "https://clientstream.launchdarkly.com");

  env_["SANDGATE_LD_MODE"] = "LIST";
  env_["SANDGATE_LD_FLAG"] = "egress.allow_list-2";
  env_["SANDGATE_LD_CACHE_TTL"] = "60";
  env_["SANDGATE_LD_TIMEOUT"] = "0.25";
  env_["SANDGATE_LD_CONTEXT_KEY"] = "build-bot";
  const Settings s = ok();
  EXPECT_EQ(s.ld_mode, LdMode::list);
  EXPECT_EQ(s.ld_flag, "egress.allow_list-2");
  EXPECT_EQ(s.ld_cache_ttl, std::chrono::seconds(60));
  EXPECT_EQ(s.ld_timeout, std::chrono::milliseconds(250));
  EXPECT_EQ(s.ld_context_key, "build-bot");

  env_.clear();
  env_["SANDGATE_LD_MODE"] = "stream";
  EXPECT_EQ(error(), "SANDGATE_LD_MODE='stream': expected domain or list");
  env_.clear();
  env_["SANDGATE_LD_FLAG"] = "egress allowlist";
  EXPECT_THAT(error(), StartsWith("SANDGATE_LD_FLAG='egress allowlist': expected a flag key"));
  for (std::string_view bad : {"0", "0.001", "1.", ".5", "1.2345", "-1", "121", "5s"}) {
    env_.clear();
    env_["SANDGATE_LD_TIMEOUT"] = std::string(bad);
    EXPECT_THAT(error(), StartsWith("SANDGATE_LD_TIMEOUT='" + std::string(bad) + "': expected"))
        << bad;
  }
}

TEST_F(SettingsTest, LaunchDarklyServiceUris) {
  env_["LAUNCHDARKLY_BASE_URI"] = "https://relay.example.com:8443/ld/";
  env_["LAUNCHDARKLY_STREAM_URI"] = "http://127.0.0.1:7000";
  Settings s = ok();
  EXPECT_TRUE(s.ld_base_uri.tls);
  EXPECT_EQ(s.ld_base_uri.host, "relay.example.com");
  EXPECT_EQ(s.ld_base_uri.port, 8443);
  EXPECT_EQ(s.ld_base_uri.prefix, "/ld");
  EXPECT_FALSE(s.ld_stream_uri.tls);
  EXPECT_EQ(s.ld_stream_uri.port, 7000);
  EXPECT_EQ(s.ld_stream_uri.text(), "http://127.0.0.1:7000");

  env_.clear();
  env_["LAUNCHDARKLY_BASE_URI"] = "http://[::1]:9000";
  EXPECT_EQ(ok().ld_base_uri.host, "::1");
  env_["LAUNCHDARKLY_BASE_URI"] = "http://localhost:9000";
  EXPECT_EQ(ok().ld_base_uri.host, "localhost");

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"http://relay.example.com", "plain http is allowed only to a loopback address"},
      {"http://10.0.0.1:80", "plain http is allowed only to a loopback address"},
      {"ftp://x.example", "is not an https://"},
      {"clientsdk.launchdarkly.com", "is not an https://"},
      {"https://user:pw@relay.example.com", "user information"},
      {"https://relay.example.com/a?b", "no query"},
      {"https://relay.example.com/a b", "no query"},
      {"https://relay.example.com:99999", "port"},
      {"https://", "'https://'"},
  };
  for (const auto& [value, why] : bad) {
    env_.clear();
    env_["LAUNCHDARKLY_BASE_URI"] = value;
    const std::string message = error();
    EXPECT_THAT(message, StartsWith("LAUNCHDARKLY_BASE_URI='" + value + "'")) << value;
    EXPECT_THAT(message, HasSubstr(why)) << value;
  }
}

TEST_F(SettingsTest, LogLevel) {
  EXPECT_EQ(ok().log_level, LogLevel::info);
  for (const auto& [text, level] :
       std::vector<std::pair<std::string, LogLevel>>{{"error", LogLevel::error},
                                                     {"WARNING", LogLevel::warning},
                                                     {"warn", LogLevel::warning},
                                                     {"Info", LogLevel::info}}) {
    env_["SANDGATE_LOG_LEVEL"] = text;
    EXPECT_EQ(ok().log_level, level) << text;
  }
  env_["SANDGATE_LOG_LEVEL"] = "debug";
  EXPECT_EQ(error(), "SANDGATE_LOG_LEVEL='debug': expected error, warning or info");
}

// ---- The daemon ----

TEST_F(SettingsTest, ListenMustBeLoopbackUnlessRemoteClientsAreAllowed) {
  for (std::string_view loopback : {"127.0.0.1:9000", "127.8.9.10:0", "[::1]:9000", "[::1]:0"}) {
    env_ = {{"SANDGATE_LISTEN", std::string(loopback)}};
    EXPECT_EQ(ok().listen.text(), loopback);
  }
  for (std::string_view remote : {"0.0.0.0:9877", "192.168.1.5:80", "[::]:9877", "[2001:db8::1]:80",
                                  "[::ffff:192.168.1.5]:80"}) {
    SCOPED_TRACE(remote);
    env_ = {{"SANDGATE_LISTEN", std::string(remote)}};
    const std::string message = error();
    EXPECT_THAT(message, StartsWith("listen address " + std::string(remote) + " is not loopback"));
    EXPECT_THAT(message, HasSubstr("--allow-remote-clients"));
    EXPECT_THAT(message, HasSubstr("SANDGATE_ALLOW_REMOTE_CLIENTS"));
    env_["SANDGATE_ALLOW_REMOTE_CLIENTS"] = "true";
    EXPECT_EQ(ok().listen.text(), remote);
    EXPECT_TRUE(ok().allow_remote_clients);
  }
  // Also from the file and a flag.
  env_.clear();
  config("listen = \"0.0.0.0:9877\"\n");
  EXPECT_THAT(error(), StartsWith("listen address 0.0.0.0:9877 is not loopback"));
  flags_["--allow-remote-clients"] = "true";
  EXPECT_EQ(ok().listen.text(), "0.0.0.0:9877");
}

TEST_F(SettingsTest, ListenSyntax) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"localhost:80",
       "'localhost' is not an IPv4 address in dotted form (write IPv6 as "
       "[ADDR]:PORT)"},
      {"127.0.0.1", "'127.0.0.1' needs a port (ADDR:PORT)"},
      {"127.0.0.1:", "'127.0.0.1:' needs a port (ADDR:PORT)"},
      {"127.0.0.1:65536", "'65536' is not a port (0..65535)"},
      {"127.0.0.1:08080", "'08080' is not a port (0..65535)"},
      {"127.1:80", "'127.1' is not an IPv4 address in dotted form (write IPv6 as [ADDR]:PORT)"},
      {"[::1", "'[::1': '[' without ']'"},
      {"[::1]80", "'[::1]80': expected ':PORT' after ']'"},
      {"[::1]", "'[::1]' needs a port (ADDR:PORT)"},
      {"[localhost]:80", "'localhost' is not an IPv6 address"},
  };
  for (const auto& [value, message] : bad) {
    env_ = {{"SANDGATE_LISTEN", value}};
    EXPECT_EQ(error(), "SANDGATE_LISTEN='" + value + "': " + message);
  }
}

TEST_F(SettingsTest, ListenOnAUnixSocket) {
  env_ = {{"SANDGATE_LISTEN", "unix:/run/user/1000/sandgate.sock"}};
  EXPECT_EQ(ok().listen.text(),
            "unix:/run/user/1000/sandgate.sock");  // local: no remote-clients flag
  env_ = {{"SANDGATE_LISTEN", "unix:~/gate.sock"}};
  EXPECT_EQ(ok().listen.text(), "unix:" + home_ + "/gate.sock");
  ASSERT_NE(ok().listen.unix_socket(), nullptr);
  EXPECT_EQ(ok().listen.unix_socket()->path, home_ + "/gate.sock");
  EXPECT_EQ(parse_listen_address("127.0.0.1:9877")->unix_socket(), nullptr);

  const std::string long_path = "/" + std::string(120, 'a');
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"unix:", "'unix:' needs a socket path"},
      {"unix:gate.sock", "'unix:gate.sock' needs an absolute socket path"},
      {"unix:" + long_path, "is too long for a unix socket (at most 107 bytes)"},
  };
  for (const auto& [value, message] : bad) {
    SCOPED_TRACE(value);
    env_ = {{"SANDGATE_LISTEN", value}};
    const std::string text = error();
    EXPECT_THAT(text, StartsWith("SANDGATE_LISTEN='" + value + "': "));
    EXPECT_THAT(text, HasSubstr(message));
  }
  env_.clear();
  flags_["--listen"] = "unix:";
  EXPECT_THAT(error(), StartsWith("--listen='unix:': "));

  // A unix socket has no port to write to a port file.
  flags_["--listen"] = "unix:/tmp/gate.sock";
  flags_["--port-file"] = "/tmp/port";
  const std::string text = error();
  EXPECT_THAT(text, HasSubstr("SANDGATE_PORT_FILE"));
  EXPECT_THAT(text, HasSubstr("unix:/tmp/gate.sock"));
  EXPECT_THAT(text, HasSubstr("drop the port file"));
}

// ---- Client authentication: token and token_file ----

const std::string kToken = "s3cret-T0ken-0123456789";

TEST_F(SettingsTest, TokenFromEachSource) {
  EXPECT_EQ(ok().token, "");
  env_["SANDGATE_TOKEN"] = kToken;
  EXPECT_EQ(ok().token, kToken);
  env_.clear();
  flags_["--token"] = kToken + "-flag";
  EXPECT_EQ(ok().token, kToken + "-flag");
  flags_.clear();
  config("token = \"" + kToken + "-file\"\n");
  EXPECT_EQ(ok().token, kToken + "-file");
  EXPECT_EQ(ok().token_file, "");
}

TEST_F(SettingsTest, BadTokensAreRefusedWithoutEchoingThem) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"short-secret-15", "shorter than 16 characters"},
      {"with a space in the token", "visible ASCII"},
      {"tab\tin-the-token-0123", "visible ASCII"},
      {std::string(1025, 'x'), "longer than 1024 characters"},
  };
  for (const auto& [value, why] : bad) {
    SCOPED_TRACE(why);
    env_ = {{"SANDGATE_TOKEN", value}};
    std::string text = error();
    EXPECT_THAT(text, StartsWith("SANDGATE_TOKEN: the token "));
    EXPECT_THAT(text, HasSubstr(why));
    EXPECT_EQ(text.find(value), std::string::npos) << text;
    EXPECT_EQ(text.find(value.substr(0, 6)), std::string::npos) << text;

    env_.clear();
    flags_ = {{"--token", value}};
    text = error();
    EXPECT_THAT(text, StartsWith("--token: the token "));
    EXPECT_EQ(text.find(value.substr(0, 6)), std::string::npos) << text;

    flags_.clear();
    const std::string path = config("\n\ntoken = \"" + value + "\"\n");
    text = error();
    EXPECT_THAT(text, StartsWith(path + ":3: token: the token "));
    EXPECT_EQ(text.find(value.substr(0, 6)), std::string::npos) << text;
    flags_.clear();
  }
}

TEST_F(SettingsTest, TokenFileFirstLine) {
  const std::string path = write("secrets/token", kToken + "\nsecond line is ignored\n");
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  env_["SANDGATE_TOKEN_FILE"] = path;
  Settings s = ok();
  EXPECT_EQ(s.token, kToken);
  EXPECT_EQ(s.token_file, path);

  // CRLF, no final newline, `~`, the flag and the TOML key.
  write("secrets/crlf", kToken + "\r\n");
  fs::permissions(home_ + "/secrets/crlf", fs::perms::owner_read);
  env_["SANDGATE_TOKEN_FILE"] = "~/secrets/crlf";
  EXPECT_EQ(ok().token, kToken);
  write("secrets/bare", kToken);
  fs::permissions(home_ + "/secrets/bare", fs::perms::owner_read | fs::perms::group_read);
  env_.clear();
  flags_["--token-file"] = home_ + "/secrets/bare";
  EXPECT_EQ(ok().token, kToken);
  flags_.clear();
  config("token_file = \"~/secrets/bare\"\n");
  EXPECT_EQ(ok().token, kToken);
}

TEST_F(SettingsTest, BadTokenFilesAreRefusedWithoutEchoingTheToken) {
  const auto owner_only = fs::perms::owner_read | fs::perms::owner_write;
  struct Case {
    std::string name;
    std::string text;
    fs::perms perms;
    std::string why;
  };
  const std::vector<Case> cases = {
      {"readable", kToken + "\n", owner_only | fs::perms::others_read,
       "other users can read or write the token file (mode 0604); chmod 600 "},
      {"writable", kToken + "\n", owner_only | fs::perms::others_write,
       "other users can read or write the token file (mode 0602)"},
      {"empty", "", owner_only, "the first line of the token file is empty"},
      {"blank-first-line", "\n" + kToken + "\n", owner_only,
       "the first line of the token file is empty"},
      {"short", "short-secret-15\n", owner_only, "shorter than 16 characters"},
      {"spaces", " " + kToken + "\n", owner_only, "visible ASCII"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = write("secrets/" + c.name, c.text);
    fs::permissions(path, c.perms);
    env_ = {{"SANDGATE_TOKEN_FILE", path}};
    const std::string text = error();
    EXPECT_THAT(text, StartsWith("SANDGATE_TOKEN_FILE='" + path + "': "));
    EXPECT_THAT(text, HasSubstr(c.why));
    EXPECT_EQ(text.find("s3cret"), std::string::npos) << text;
    EXPECT_EQ(text.find("short-secret"), std::string::npos) << text;
  }
  env_ = {{"SANDGATE_TOKEN_FILE", home_ + "/secrets/missing"}};
  EXPECT_THAT(error(), HasSubstr("cannot read the token file: No such file or directory"));
  fs::create_directories(home_ + "/secrets/folder");
  env_ = {{"SANDGATE_TOKEN_FILE", home_ + "/secrets/folder"}};
  EXPECT_THAT(error(), HasSubstr("the token file is not a regular file"));
}

TEST_F(SettingsTest, TokenAndTokenFileTogetherAreRefused) {
  const std::string path = write("token", kToken + "\n");
  fs::permissions(path, fs::perms::owner_read);
  env_ = {{"SANDGATE_TOKEN", kToken}};
  flags_ = {{"--token-file", path}};
  const std::string text = error();
  EXPECT_THAT(text, StartsWith("--token-file='" + path + "': "));
  EXPECT_THAT(text, HasSubstr("give one of them"));
  EXPECT_EQ(text.find(kToken), std::string::npos) << text;
}

// ---- The admin token: admin_token and admin_token_file, read and checked like the token ----

const std::string kAdminToken = "adm1n-T0ken-9876543210";

TEST_F(SettingsTest, AdminTokenFromEachSource) {
  EXPECT_EQ(ok().admin_token, "");
  env_["SANDGATE_ADMIN_TOKEN"] = kAdminToken;
  EXPECT_EQ(ok().admin_token, kAdminToken);
  EXPECT_EQ(ok().token, "") << "the admin token is not the proxy token";
  env_.clear();
  flags_["--admin-token"] = kAdminToken + "-flag";
  EXPECT_EQ(ok().admin_token, kAdminToken + "-flag");
  flags_.clear();
  config("admin_token = \"" + kAdminToken + "-file\"\n");
  EXPECT_EQ(ok().admin_token, kAdminToken + "-file");
  EXPECT_EQ(ok().admin_token_file, "");
}

TEST_F(SettingsTest, BadAdminTokensAreRefusedWithoutEchoingThem) {
  for (const std::string& value :
       {std::string("short-secret-15"), std::string("with a space in it!!")}) {
    SCOPED_TRACE(value);
    env_ = {{"SANDGATE_ADMIN_TOKEN", value}};
    std::string text = error();
    EXPECT_THAT(text, StartsWith("SANDGATE_ADMIN_TOKEN: the admin token "));
    EXPECT_EQ(text.find(value.substr(0, 6)), std::string::npos) << text;
    env_.clear();
    const std::string path = config("\nadmin_token = \"" + value + "\"\n");
    text = error();
    EXPECT_THAT(text, StartsWith(path + ":2: admin_token: the admin token "));
    EXPECT_EQ(text.find(value.substr(0, 6)), std::string::npos) << text;
    flags_.clear();
  }
}

TEST_F(SettingsTest, AdminTokenFileFirstLineAndItsModeChecks) {
  const std::string path = write("secrets/admin", kAdminToken + "\nignored\n");
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  env_["SANDGATE_ADMIN_TOKEN_FILE"] = path;
  Settings s = ok();
  EXPECT_EQ(s.admin_token, kAdminToken);
  EXPECT_EQ(s.admin_token_file, path);
  EXPECT_EQ(s.token, "");
  env_.clear();
  flags_["--admin-token-file"] = "~/secrets/admin";
  EXPECT_EQ(ok().admin_token, kAdminToken);
  flags_.clear();
  config("admin_token_file = \"~/secrets/admin\"\n");
  EXPECT_EQ(ok().admin_token, kAdminToken);
  flags_.clear();

  // The same refusals as the token file's, naming the admin token file.
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
  env_ = {{"SANDGATE_ADMIN_TOKEN_FILE", path}};
  std::string text = error();
  EXPECT_THAT(text, StartsWith("SANDGATE_ADMIN_TOKEN_FILE='" + path + "': "));
  EXPECT_THAT(text, HasSubstr("other users can read or write the admin token file (mode 0604)"));
  EXPECT_EQ(text.find("adm1n"), std::string::npos) << text;
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_write);
  EXPECT_THAT(error(), HasSubstr("the admin token file (mode 0602)"));
  const std::string empty = write("secrets/empty", "\n" + kAdminToken + "\n");
  fs::permissions(empty, fs::perms::owner_read);
  env_ = {{"SANDGATE_ADMIN_TOKEN_FILE", empty}};
  EXPECT_THAT(error(), HasSubstr("the first line of the admin token file is empty; it should "
                                 "hold the admin token"));
  const std::string short_one = write("secrets/short", "short-secret-15\n");
  fs::permissions(short_one, fs::perms::owner_read);
  env_ = {{"SANDGATE_ADMIN_TOKEN_FILE", short_one}};
  EXPECT_THAT(error(), HasSubstr("the admin token in the file is shorter than 16 characters"));
  env_ = {{"SANDGATE_ADMIN_TOKEN_FILE", home_ + "/secrets/missing"}};
  EXPECT_THAT(error(), HasSubstr("cannot read the admin token file: No such file or directory"));
  env_ = {{"SANDGATE_ADMIN_TOKEN_FILE", home_ + "/secrets"}};
  EXPECT_THAT(error(), HasSubstr("the admin token file is not a regular file"));
}

TEST_F(SettingsTest, AdminTokenAndAdminTokenFileTogetherAreRefused) {
  const std::string path = write("admin", kAdminToken + "\n");
  fs::permissions(path, fs::perms::owner_read);
  env_ = {{"SANDGATE_ADMIN_TOKEN", kAdminToken}};
  flags_ = {{"--admin-token-file", path}};
  const std::string text = error();
  EXPECT_THAT(text, StartsWith("--admin-token-file='" + path + "': "));
  EXPECT_THAT(text, HasSubstr("an admin token is given both directly (--admin-token"));
  EXPECT_EQ(text.find(kAdminToken), std::string::npos) << text;
  // A proxy token and an admin token file are two settings, not one given twice.
  env_ = {{"SANDGATE_TOKEN", kToken}};
  EXPECT_EQ(ok().admin_token, kAdminToken);
}

// The agent holds the proxy token: an admin token equal to it would let the agent answer its
// own questions, so the pair is refused, whichever forms they come in, naming both settings.
TEST_F(SettingsTest, AnAdminTokenEqualToTheProxyTokenIsRefused) {
  env_ = {{"SANDGATE_TOKEN", kToken}, {"SANDGATE_ADMIN_TOKEN", kToken}};
  std::string text = error();
  EXPECT_THAT(text, HasSubstr("the admin token (--admin-token, --admin-token-file"));
  EXPECT_THAT(text, HasSubstr("equals the proxy token (--token, --token-file"));
  EXPECT_EQ(text.find(kToken), std::string::npos) << text;
  const std::string path = write("secrets/same", kToken + "\n");
  fs::permissions(path, fs::perms::owner_read);
  env_ = {{"SANDGATE_TOKEN_FILE", path}};
  flags_ = {{"--admin-token-file", path}};
  EXPECT_THAT(error(), HasSubstr("equals the proxy token"));
}

// --help shows a default-built Settings (each default is written once, in the struct); with no
// source given, load() must arrive at the same values, or --help would name one default while
// the gate used another.
TEST_F(SettingsTest, HelpShowsTheDefaultsLoadArrivesAt) {
  const Settings loaded = ok();
  for (const auto& row : detail::table()) {
    SCOPED_TRACE(row.info.key);
    std::string expected(row.info.default_text);
    if (row.info.key == "blocklist") {
      expected = home_ + expected.substr(1);  // `~` is expanded when loading
    } else if (row.info.key == "threads") {
      expected = std::to_string(default_threads());  // counted when loading
    }
    EXPECT_EQ(row.show(loaded), expected);
  }
  EXPECT_EQ(all_settings().size(), detail::table().size());
}

TEST_F(SettingsTest, DnsServers) {
  env_["SANDGATE_DNS_SERVERS"] = "1.1.1.1, 9.9.9.9:5353 ,[2606:4700:4700::1111]:53,[::1]";
  // Parsed once, here: a bare address means port 53.
  EXPECT_THAT(texts(ok().dns_servers),
              ElementsAre("1.1.1.1:53", "9.9.9.9:5353", "[2606:4700:4700::1111]:53", "[::1]:53"));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"1.1.1.1:0", "'0' is not a port (1..65535)"},
      {"1.1.1.1:", "'1.1.1.1:' needs a port (ADDR:PORT)"},
      {"dns.google",
       "'dns.google' is not an IPv4 address in dotted form (write IPv6 as "
       "[ADDR]:PORT)"},
      {"2606:4700::1111",
       "'2606:4700:' is not an IPv4 address in dotted form (write IPv6 as "
       "[ADDR]:PORT)"},
      {"1.1.1.1,,8.8.8.8", "empty item in a comma-separated list"},
  };
  for (const auto& [value, message] : bad) {
    env_["SANDGATE_DNS_SERVERS"] = value;
    EXPECT_EQ(error(), "SANDGATE_DNS_SERVERS='" + value + "': " + message);
  }
  env_.clear();
  flags_["--dns-server"] = "8.8.8.8:53";
  EXPECT_THAT(texts(ok().dns_servers), ElementsAre("8.8.8.8:53"));
}

TEST_F(SettingsTest, ThreadsAndOtherNumbers) {
  EXPECT_EQ(ok().threads, default_threads());

  env_["SANDGATE_THREADS"] = "4";
  EXPECT_EQ(ok().threads, 4u);
  env_["SANDGATE_THREADS"] = "256";
  EXPECT_EQ(ok().threads, 256u);
  for (std::string_view bad : {"0", "257", "-1", "two", "4.5"}) {
    env_["SANDGATE_THREADS"] = std::string(bad);
    EXPECT_EQ(error(),
              "SANDGATE_THREADS='" + std::string(bad) + "': expected a number of threads, 1..256");
  }
  env_.clear();

  struct Number {
    std::string var, value, message;  // message empty: accepted
  };
  const std::vector<Number> numbers = {
      {"SANDGATE_DNS_TIMEOUT", "60", ""},
      {"SANDGATE_DNS_TIMEOUT", "0", "expected a whole number of seconds, 1..60"},
      {"SANDGATE_DNS_TIMEOUT", "61", "expected a whole number of seconds, 1..60"},
      {"SANDGATE_HEAD_TIMEOUT", "0", "expected a whole number of seconds, 1..600"},
      {"SANDGATE_CONNECT_TIMEOUT", "0", "expected a whole number of seconds, 1..600"},
      {"SANDGATE_CONNECT_TIMEOUT", "600", ""},
      {"SANDGATE_IDLE_TIMEOUT", "0", ""},
      {"SANDGATE_IDLE_TIMEOUT", "86401", "expected a whole number of seconds, 0..86400"},
      {"SANDGATE_DRAIN_SECONDS", "0", ""},
      {"SANDGATE_MAX_CONNECTIONS", "0", "expected a number of connections, 1..1000000"},
      {"SANDGATE_MAX_CONNECTIONS", "1000000", ""},
      {"SANDGATE_LOG_FORMAT", "Json", ""},
  };
  for (const Number& n : numbers) {
    SCOPED_TRACE(n.var + "=" + n.value);
    env_ = {{n.var, n.value}};
    if (n.message.empty()) {
      EXPECT_TRUE(load(sources()).has_value());
    } else {
      EXPECT_EQ(error(), n.var + "='" + n.value + "': " + n.message);
    }
  }
  env_ = {{"SANDGATE_IDLE_TIMEOUT", "300"},
          {"SANDGATE_MAX_CONNECTIONS", "10"},
          {"SANDGATE_LOG_FORMAT", "JSON"}};
  const Settings s = ok();
  EXPECT_EQ(s.idle_timeout.count(), 300);
  EXPECT_EQ(s.max_connections, 10u);
  EXPECT_EQ(s.log_format, LogFormat::json);
}

// The default worker count follows the CPUs this process may run on, not the machine's.
TEST(SettingsThreads, DefaultFollowsTheAffinityMask) {
  cpu_set_t previous;
  ASSERT_EQ(::sched_getaffinity(0, sizeof previous, &previous), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &previous)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
  const UsableCpus cpus = usable_cpus();
  ::sched_setaffinity(0, sizeof previous, &previous);
  EXPECT_EQ(cpus.count, 1u);
  EXPECT_FALSE(cpus.why.empty());
}

// ---- load_policy ----

TEST_F(SettingsTest, DefaultBlocklistAbsentUseTemplateWritesNothing) {
  const Settings s = ok();
  ASSERT_TRUE(s.blocklist_is_default);
  auto loaded = load_policy(s, MissingDefaultBlocklist::use_template);
  ASSERT_TRUE(loaded.has_value()) << loaded.error();
  EXPECT_FALSE(fs::exists(s.blocklist_path));
  EXPECT_FALSE(fs::exists(home_ + "/.config"));
  EXPECT_TRUE(loaded->issues.empty());
  ASSERT_EQ(loaded->notes.size(), 1u);
  EXPECT_THAT(loaded->notes[0], HasSubstr(s.blocklist_path));
  // The template blocks nothing.
  EXPECT_EQ(loaded->policy->blocklist().size(), 0u);
  EXPECT_EQ(loaded->policy->allowlist(), nullptr);
}

TEST_F(SettingsTest, DefaultBlocklistAbsentCreateWritesTheTemplateAndItsFolder) {
  const Settings s = ok();
  auto loaded = load_policy(s, MissingDefaultBlocklist::create);
  ASSERT_TRUE(loaded.has_value()) << loaded.error();
  ASSERT_TRUE(fs::is_regular_file(s.blocklist_path));
  const std::string written = read_file(s.blocklist_path);
  EXPECT_EQ(written, defaults::blocklist_template());
  EXPECT_EQ(written, read_file(fs::path(SANDGATE_SOURCE_DIR) / "config" / "blocked.txt"));
  // goose's template mentions these examples, and blocks nothing.
  for (std::string_view example : {"evil.com", "pastebin.com", "transfer.sh", "webhook.site"}) {
    EXPECT_THAT(written, HasSubstr(std::string(example)));
  }
  EXPECT_EQ(loaded->policy->blocklist().size(), 0u);
  EXPECT_TRUE(loaded->issues.empty());
  ASSERT_EQ(loaded->notes.size(), 1u);
  EXPECT_THAT(loaded->notes[0], StartsWith("created " + s.blocklist_path));
  EXPECT_FALSE(fs::exists(s.blocklist_path + ".sandgate-new"));

  // An existing file is read, never overwritten.
  write(".config/goose/sandbox/blocked.txt", "evil.com\n");
  auto again = load_policy(s, MissingDefaultBlocklist::create);
  ASSERT_TRUE(again.has_value()) << again.error();
  EXPECT_EQ(read_file(s.blocklist_path), "evil.com\n");
  EXPECT_TRUE(again->notes.empty());
  EXPECT_EQ(again->policy->blocklist().size(), 1u);
  auto host = rules::parse_host("api.evil.com");
  ASSERT_TRUE(host.has_value());
  EXPECT_EQ(again->policy->decide(*host, 443).reason, rules::Reason::blocklist);
}

TEST_F(SettingsTest, CreateFailsWithAMessageWhenTheFolderCannotBeMade) {
  Settings s = ok();
  const std::string file = write("not-a-folder", "x");
  s.blocklist_path = file + "/sandbox/blocked.txt";
  s.blocklist_is_default = true;
  auto loaded = load_policy(s, MissingDefaultBlocklist::create);
  ASSERT_FALSE(loaded.has_value());
  EXPECT_THAT(loaded.error(), StartsWith("blocklist: cannot create folder " + file + "/sandbox"));
}

TEST_F(SettingsTest, ExplicitMissingBlocklistIsAnErrorNamingThePath) {
  env_["SANDGATE_BLOCKLIST"] = "~/lists/missing.txt";
  const Settings s = ok();
  ASSERT_FALSE(s.blocklist_is_default);
  for (auto mode : {MissingDefaultBlocklist::use_template, MissingDefaultBlocklist::create}) {
    auto loaded = load_policy(s, mode);
    ASSERT_FALSE(loaded.has_value());
    EXPECT_EQ(loaded.error(), "blocklist " + home_ +
                                  "/lists/missing.txt: No such file or directory (set by "
                                  "blocklist setting)");
    EXPECT_FALSE(fs::exists(home_ + "/lists"));  // never created
  }
  // A folder is no file.
  fs::create_directories(home_ + "/folder");
  env_["SANDGATE_BLOCKLIST"] = home_ + "/folder";
  auto loaded = load_policy(ok(), MissingDefaultBlocklist::use_template);
  ASSERT_FALSE(loaded.has_value());
  EXPECT_THAT(loaded.error(), HasSubstr(home_ + "/folder: is a folder, not a file"));
}

TEST_F(SettingsTest, BadLinesAreReportedWithFileAndLine) {
  const std::string path = write("blocked.txt",
                                 "# my list\n"
                                 "evil.com   # inline comment\n"
                                 "bad@host.com\n"
                                 "\n"
                                 "ok.example\n"
                                 "*\n");
  env_["SANDGATE_BLOCKLIST"] = path;
  auto loaded = load_policy(ok(), MissingDefaultBlocklist::use_template);
  ASSERT_TRUE(loaded.has_value()) << loaded.error();
  ASSERT_EQ(loaded->issues.size(), 2u);
  EXPECT_EQ(loaded->issues[0].source, path);
  EXPECT_EQ(loaded->issues[0].line, 3u);
  EXPECT_EQ(loaded->issues[0].text, "bad@host.com");
  EXPECT_EQ(loaded->issues[0].message, "user information ('@') in host");
  EXPECT_EQ(loaded->issues[1].source, path);
  EXPECT_EQ(loaded->issues[1].line, 6u);
  EXPECT_EQ(loaded->issues[1].text, "*");
  // The good lines still load, and report where they came from.
  EXPECT_EQ(loaded->policy->blocklist().size(), 2u);
  auto host = rules::parse_host("x.ok.example");
  ASSERT_TRUE(host.has_value());
  const auto decision = loaded->policy->decide(*host, 443);
  ASSERT_TRUE(decision.rule.has_value());
  EXPECT_EQ(decision.rule->source, path);
  EXPECT_EQ(decision.rule->line, 5u);
}

TEST_F(SettingsTest, AllowlistMissingIsAnErrorAndPresentIsUsed) {
  env_["SANDGATE_ALLOWLIST"] = "~/allow.txt";
  auto missing = load_policy(ok(), MissingDefaultBlocklist::use_template);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error(), "allowlist " + home_ + "/allow.txt: No such file or directory");

  const std::string path = write("allow.txt", "example.com\nbad..name\n");
  auto loaded = load_policy(ok(), MissingDefaultBlocklist::use_template);
  ASSERT_TRUE(loaded.has_value()) << loaded.error();
  ASSERT_NE(loaded->policy->allowlist(), nullptr);
  EXPECT_EQ(loaded->policy->allowlist()->size(), 1u);
  ASSERT_EQ(loaded->issues.size(), 1u);
  EXPECT_EQ(loaded->issues[0].source, path);
  EXPECT_EQ(loaded->issues[0].line, 2u);
  auto other = rules::parse_host("other.org");
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(loaded->policy->decide(*other, 443).reason, rules::Reason::not_allowlisted);
}

TEST_F(SettingsTest, PolicyOptionsComeFromTheSettings) {
  env_ = {{"GOOSE_SANDBOX_ALLOW_IP", "true"},
          {"GOOSE_SANDBOX_GIT_HOSTS", "git.corp.example"},
          {"SANDGATE_ALLOWED_PORTS", "22,443"}};
  auto loaded = load_policy(ok(), MissingDefaultBlocklist::use_template);
  ASSERT_TRUE(loaded.has_value()) << loaded.error();
  const auto& options = loaded->policy->options();
  EXPECT_TRUE(options.allow_ip);
  EXPECT_THAT(options.git_hosts, ElementsAre("git.corp.example"));
  EXPECT_THAT(options.allowed_ports, ElementsAre(22, 443));
  auto github = rules::parse_host("github.com");
  ASSERT_TRUE(github.has_value());
  EXPECT_EQ(loaded->policy->decide(*github, 22).reason, rules::Reason::ssh_non_git_host);
  EXPECT_EQ(loaded->policy->decide(*github, 80).reason, rules::Reason::port_not_allowed);
}

}  // namespace
}  // namespace sandgate::settings
