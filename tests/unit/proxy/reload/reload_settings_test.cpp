// What a config reload applies and what it names as needing a restart (reload/policy_reloader):
// every setting is classified as reloadable or restart-only, the reloadable ones are taken from a
// fresh load only when they changed, and every change is named by key, flag and variable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "proxy/reload/policy_reloader.hpp"
#include "proxy/settings/load.hpp"
#include "proxy/settings/settings.hpp"

namespace sandgate::reload {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A setting added to settings.cpp must be classified here, or a reload would change it silently
// without saying that it is not applied.
TEST(ReloadSettings, EverySettingIsClassified) {
  std::set<std::string_view> compared;
  for (const auto& row : compared_settings()) {
    EXPECT_TRUE(compared.insert(row.key).second) << "listed twice: " << row.key;
  }
  std::set<std::string_view> known;
  for (const auto& info : settings::all_settings()) {
    known.insert(info.key);
    EXPECT_EQ(compared.count(info.key), 1u)
        << "setting '" << info.key << "' is not classified in policy_reloader.cpp";
  }
  for (auto key : compared) {
    EXPECT_EQ(known.count(key), 1u) << "no such setting: " << key;
  }
}

// docs/settings.md's settings table is the settings' reference for users (and, through man/, the
// OPTIONS of sandgate(1) and the keys of sandgate.toml(5)): one row per setting, with the flag,
// TOML key and variable of the gate's own table (settings/setting_table.cpp) and the reload class
// of policy_reloader.cpp. A setting added, renamed or reclassified without its row fails here, as
// does a row left behind.
TEST(ReloadSettings, TheDocsListEverySettingOnce) {
  const std::string page = std::string(SANDGATE_SOURCE_DIR) + "/docs/settings.md";
  std::ifstream docs(page);
  ASSERT_TRUE(docs) << page << " not found";
  struct Row {
    std::string flag, env, reload;
    int count = 0;
  };
  std::map<std::string, Row, std::less<>> rows;  // by TOML key
  // | `--flag` / `key` | `VARIABLE` | default | live or restart | meaning |
  const std::regex row_shape(
      R"(^\| `(--[a-z0-9-]+)` / `([a-z0-9_]+)` \| `([A-Z0-9_]+)` \| [^|]* \| ([a-z]+) \|)");
  bool in_settings = false;
  int row_lines = 0;
  for (std::string line; std::getline(docs, line);) {
    if (line.starts_with("## ")) {
      in_settings = line == "## Settings";
      continue;
    }
    if (!in_settings || !line.starts_with("| `--")) {
      continue;
    }
    ++row_lines;
    std::smatch match;
    ASSERT_TRUE(std::regex_search(line, match, row_shape))
        << "a settings row of another shape: " << line;
    Row& row = rows[match[2].str()];
    row.flag = match[1].str();
    row.env = match[3].str();
    row.reload = match[4].str();
    ++row.count;
  }
  std::map<std::string_view, bool> live;
  for (const auto& setting : compared_settings()) {
    live[setting.key] = setting.live;
  }
  ASSERT_GT(row_lines, 0) << "no settings table under '## Settings' in " << page;
  std::size_t documented = 0;
  for (const auto& info : settings::all_settings()) {
    auto found = rows.find(info.key);
    if (found == rows.end()) {
      ADD_FAILURE() << "docs/settings.md has no row for setting '" << info.key << "' (" << info.flag
                    << " / " << info.env << ")";
      continue;
    }
    ++documented;
    const Row& row = found->second;
    EXPECT_EQ(row.count, 1) << info.key << " has " << row.count << " rows";
    EXPECT_EQ(row.flag, info.flag) << info.key;
    EXPECT_EQ(row.env, info.env) << info.key;
    EXPECT_EQ(row.reload, live.at(info.key) ? "live" : "restart") << info.key;
  }
  EXPECT_EQ(documented, rows.size())
      << "docs/settings.md documents a setting the gate does not have";
}

// The reloadable settings: the policy options, and what every request reads afresh (the SNI
// check and TLS ports, revocation, the token, the timeouts) and the log level. Everything else is
// read once at start-up.
TEST(ReloadSettings, ReloadableSettingsAreTheOnesReadPerRequest) {
  std::set<std::string_view> live;
  for (const auto& row : compared_settings()) {
    if (row.live) {
      live.insert(row.key);
    }
  }
  EXPECT_EQ(live, (std::set<std::string_view>{"block_loopback",
                                              "allow_ip",
                                              "allow_ssh",
                                              "ssh_all_hosts",
                                              "git_hosts",
                                              "ssh_ports",
                                              "allowed_ports",
                                              "block_private",
                                              "allow_metadata",
                                              "sni_check",
                                              "tls_ports",
                                              "revoke_on_reload",
                                              "token",
                                              "token_file",
                                              "admin_token",
                                              "admin_token_file",
                                              "head_timeout",
                                              "enforce",
                                              "unknown",
                                              "ask_timeout",
                                              "ask_default",
                                              "connect_timeout",
                                              "idle_timeout",
                                              "log_level",
                                              "log_mcp_arguments",
                                              "log_websocket_messages"}));
}

TEST(ReloadSettings, ChangesAreNamedByKeyFlagAndVariable) {
  settings::Settings before;
  settings::Settings after = before;
  EXPECT_THAT(compare_settings(before, after).applied, IsEmpty());
  EXPECT_THAT(compare_settings(before, after).need_restart, IsEmpty());

  after.policy.allow_ssh = !before.policy.allow_ssh;
  after.policy.git_hosts = {"git.example"};
  after.sni_check = !before.sni_check;
  after.tls_ports = {443, 8443};
  after.token = "a-secret-token-of-some-length";
  after.head_timeout = std::chrono::seconds(30);
  after.ld_base_uri.host = "relay.example";
  after.blocklist_path = "/elsewhere/blocked.txt";
  after.listen = settings::parse_listen_address("127.0.0.1:9999").value();
  const auto change = compare_settings(before, after);
  EXPECT_THAT(change.applied, ElementsAre("allow_ssh (--allow-ssh / GOOSE_SANDBOX_ALLOW_SSH)",
                                          "git_hosts (--git-hosts / GOOSE_SANDBOX_GIT_HOSTS)",
                                          "sni_check (--sni-check / SANDGATE_SNI_CHECK)",
                                          "tls_ports (--tls-ports / SANDGATE_TLS_PORTS)",
                                          "token (--token / SANDGATE_TOKEN)",
                                          "head_timeout (--head-timeout / SANDGATE_HEAD_TIMEOUT)"));
  EXPECT_THAT(change.need_restart,
              ElementsAre("blocklist (--blocklist / SANDGATE_BLOCKLIST)",
                          "ld_base_uri (--ld-base-uri / LAUNCHDARKLY_BASE_URI)",
                          "listen (--listen / SANDGATE_LISTEN)"));
}

// Only what changed between two loads is taken into the settings in force: a value the caller
// set on purpose (`run` clears the token) survives a reload that did not change it.
TEST(ReloadSettings, ApplyTakesOnlyWhatChangedBetweenLoads) {
  settings::Settings loaded;
  loaded.token = "a-token-from-the-environment";
  settings::Settings in_force = loaded;
  in_force.token.clear();
  settings::Settings fresh = loaded;
  fresh.head_timeout = std::chrono::seconds(3);
  fresh.policy.allow_ip = !loaded.policy.allow_ip;
  fresh.listen = settings::parse_listen_address("127.0.0.1:1").value();
  const auto change = apply_reloadable(in_force, loaded, fresh);
  EXPECT_THAT(change.applied, ElementsAre("allow_ip (--allow-ip / GOOSE_SANDBOX_ALLOW_IP)",
                                          "head_timeout (--head-timeout / SANDGATE_HEAD_TIMEOUT)"));
  EXPECT_TRUE(change.policy);
  EXPECT_EQ(in_force.head_timeout, std::chrono::seconds(3));
  EXPECT_EQ(in_force.policy.allow_ip, fresh.policy.allow_ip);
  EXPECT_TRUE(in_force.token.empty()) << "an unchanged token was taken";
  EXPECT_EQ(in_force.listen, loaded.listen) << "a restart-only setting was taken";

  // A token that changed is taken; a timeout alone is no policy change.
  settings::Settings next = fresh;
  next.token = "another-token-of-some-length";
  next.connect_timeout = std::chrono::seconds(2);
  const auto second = apply_reloadable(in_force, fresh, next);
  EXPECT_THAT(second.applied,
              ElementsAre("token (--token / SANDGATE_TOKEN)",
                          "connect_timeout (--connect-timeout / SANDGATE_CONNECT_TIMEOUT)"));
  EXPECT_FALSE(second.policy);
  EXPECT_EQ(in_force.token, "another-token-of-some-length");

  // The admin token and its file are taken together, like the token's, and are no policy change.
  settings::Settings third = next;
  third.admin_token = "an-admin-token-of-some-length";
  third.admin_token_file = "/secrets/admin";
  const auto change3 = apply_reloadable(in_force, next, third);
  EXPECT_THAT(change3.applied,
              ElementsAre("admin_token (--admin-token / SANDGATE_ADMIN_TOKEN)",
                          "admin_token_file (--admin-token-file / SANDGATE_ADMIN_TOKEN_FILE)"));
  EXPECT_FALSE(change3.policy);
  EXPECT_EQ(in_force.admin_token, "an-admin-token-of-some-length");
  EXPECT_EQ(in_force.admin_token_file, "/secrets/admin");
}

}  // namespace
}  // namespace sandgate::reload
