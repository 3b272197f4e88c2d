// What a config reload applies and what it names as needing a restart (reload/policy_reloader):
// every setting is classified, the policy options apply live, everything else is named by key,
// flag and variable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "proxy/reload/policy_reloader.hpp"
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

// Exactly the policy options apply live: they are what the next Policy is built from.
TEST(ReloadSettings, OnlyThePolicyOptionsApplyLive) {
  std::set<std::string_view> live;
  for (const auto& row : compared_settings()) {
    if (row.live) {
      live.insert(row.key);
    }
  }
  EXPECT_EQ(live, (std::set<std::string_view>{"block_loopback", "allow_ip", "allow_ssh",
                                              "ssh_all_hosts", "git_hosts", "ssh_ports",
                                              "allowed_ports", "block_private", "allow_metadata"}));
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
  const auto change = compare_settings(before, after);
  EXPECT_THAT(change.applied, ElementsAre("allow_ssh (--allow-ssh / GOOSE_SANDBOX_ALLOW_SSH)",
                                          "git_hosts (--git-hosts / GOOSE_SANDBOX_GIT_HOSTS)"));
  EXPECT_THAT(change.need_restart,
              ElementsAre("blocklist (--blocklist / SANDGATE_BLOCKLIST)",
                          "sni_check (--sni-check / SANDGATE_SNI_CHECK)",
                          "tls_ports (--tls-ports / SANDGATE_TLS_PORTS)",
                          "ld_base_uri (--ld-base-uri / LAUNCHDARKLY_BASE_URI)",
                          "token (--token / SANDGATE_TOKEN)",
                          "head_timeout (--head-timeout / SANDGATE_HEAD_TIMEOUT)"));
}

}  // namespace
}  // namespace sandgate::reload
