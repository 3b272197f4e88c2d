// The parent proxy's three settings through the real loader: each source, the https:// refusal
// naming the flag or variable, the credentials file's checks (mode, content) with the password
// never in a message, the exclusions' errors, and credentials or exclusions without a parent.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "proxy/settings/load.hpp"
#include "proxy/settings/settings.hpp"

namespace sandgate::settings {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class ParentSettings : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "sandgate-parent-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    home_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(home_, ignored);
  }

  Expected<Settings, std::string> load_now() const {
    Sources s;
    s.flags = flags_;
    s.env = [env = env_](std::string_view name) -> std::optional<std::string> {
      auto it = env.find(std::string(name));
      return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    s.home = home_;
    return load(s);
  }

  std::string write(const std::string& name, const std::string& text, fs::perms perms) const {
    const std::string path = home_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    fs::permissions(path, perms);
    return path;
  }

  std::string home_;
  std::map<std::string, std::string> env_;
  std::map<std::string, std::string, std::less<>> flags_;
};

constexpr auto kOwnerOnly = fs::perms::owner_read | fs::perms::owner_write;

TEST_F(ParentSettings, UnsetMeansDirect) {
  auto s = load_now();
  ASSERT_TRUE(s) << s.error();
  EXPECT_FALSE(s->parent_proxy);
  EXPECT_FALSE(s->parent_credentials);
  EXPECT_TRUE(s->parent_exclude.empty());
}

TEST_F(ParentSettings, AllThreeFromTheirSources) {
  const std::string file = write("credentials", "agent:pa:ss\r\nignored\n", kOwnerOnly);
  env_["SANDGATE_PARENT_PROXY"] = "http://proxy.corp.example:3128/";
  flags_["--parent-proxy-credentials"] = file;
  env_["SANDGATE_PARENT_PROXY_EXCLUDE"] = "intranet.example, 10.0.0.0/8, [fd00::1]:8443";
  auto s = load_now();
  ASSERT_TRUE(s) << s.error();
  ASSERT_TRUE(s->parent_proxy);
  EXPECT_EQ(s->parent_proxy->display(), "proxy.corp.example:3128");
  ASSERT_TRUE(s->parent_credentials);
  EXPECT_EQ(s->parent_credentials->user, "agent");
  EXPECT_EQ(s->parent_credentials->password, "pa:ss");
  EXPECT_EQ(s->parent_credentials_file, file);
  EXPECT_EQ(s->parent_exclude.size(), 3u);
  EXPECT_TRUE(s->parent_exclude.excludes(*rules::parse_host("wiki.intranet.example"), 443));
}

TEST_F(ParentSettings, AnHttpsParentIsRefusedNamingTheSetting) {
  env_["SANDGATE_PARENT_PROXY"] = "https://proxy.corp.example:443";
  auto s = load_now();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error(), StartsWith("SANDGATE_PARENT_PROXY="));
  EXPECT_THAT(s.error(), HasSubstr("https:// parent proxy"));
  env_.clear();
  flags_["--parent-proxy"] = "https://proxy.corp.example:443";
  s = load_now();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error(), StartsWith("--parent-proxy="));
  for (const std::string bad : {"proxy.corp.example:3128", "http://proxy.corp.example",
                                "http://user:pw@proxy.corp.example:3128", "socks5://p:1080"}) {
    flags_["--parent-proxy"] = bad;
    EXPECT_FALSE(load_now()) << bad;
  }
}

// A URL with user information is refused because a password there leaks; the refusal must not
// leak it either, whatever else is wrong with the URL and whichever source gave it (a config
// reload's error goes to the log).
TEST_F(ParentSettings, AUrlWithAPasswordIsRefusedWithoutQuotingIt) {
  for (const std::string bad :
       {"http://agent:s3cret-pw@proxy.corp.example:3128", "agent:s3cret-pw@proxy.corp.example:3128",
        "HTTP://agent:s3cret-pw@proxy:3128/path", "socks5://agent:s3cret-pw@proxy:1080"}) {
    SCOPED_TRACE(bad);
    env_.clear();
    flags_["--parent-proxy"] = bad;
    auto s = load_now();
    ASSERT_FALSE(s);
    EXPECT_THAT(s.error(), StartsWith("--parent-proxy"));
    EXPECT_THAT(s.error(), HasSubstr("credentials file"));
    EXPECT_EQ(s.error().find("s3cret"), std::string::npos) << s.error();
    flags_.clear();
    env_["SANDGATE_PARENT_PROXY"] = bad;
    s = load_now();
    ASSERT_FALSE(s);
    EXPECT_THAT(s.error(), StartsWith("SANDGATE_PARENT_PROXY"));
    EXPECT_EQ(s.error().find("s3cret"), std::string::npos) << s.error();
  }
}

TEST_F(ParentSettings, ACredentialsFileOthersCanReadIsRefusedNamingIt) {
  env_["SANDGATE_PARENT_PROXY"] = "http://127.0.0.1:3128";
  const struct {
    const char* name;
    const char* text;
    fs::perms perms;
    const char* why;
  } cases[] = {
      {"group-readable", "agent:s3cret-pw\n", kOwnerOnly | fs::perms::group_read, "mode 0640"},
      {"world-readable", "agent:s3cret-pw\n", kOwnerOnly | fs::perms::others_read, "mode 0604"},
      {"group-writable", "agent:s3cret-pw\n", kOwnerOnly | fs::perms::group_write, "mode 0620"},
      {"no-colon", "agent-s3cret-pw\n", kOwnerOnly, "has no ':'"},
      {"empty", "", kOwnerOnly, "is empty"},
      {"no-user", ":s3cret-pw\n", kOwnerOnly, "empty user name"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = write(c.name, c.text, c.perms);
    env_["SANDGATE_PARENT_PROXY_CREDENTIALS"] = path;
    auto s = load_now();
    ASSERT_FALSE(s);
    EXPECT_THAT(s.error(), HasSubstr("the parent proxy credentials file " + path));
    EXPECT_THAT(s.error(), HasSubstr(c.why));
    EXPECT_EQ(s.error().find("s3cret"), std::string::npos) << s.error();
  }
  env_["SANDGATE_PARENT_PROXY_CREDENTIALS"] = home_ + "/missing";
  auto s = load_now();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error(), HasSubstr("No such file or directory"));
}

TEST_F(ParentSettings, BadExclusionsAndOrphansAreRefused) {
  env_["SANDGATE_PARENT_PROXY"] = "http://127.0.0.1:3128";
  for (const std::string bad : {"10.0.0.0/33", "host:0", "[::1", "bad_name!"}) {
    env_["SANDGATE_PARENT_PROXY_EXCLUDE"] = bad;
    auto s = load_now();
    ASSERT_FALSE(s) << bad;
    EXPECT_THAT(s.error(), StartsWith("SANDGATE_PARENT_PROXY_EXCLUDE="));
  }
  env_.clear();
  env_["SANDGATE_PARENT_PROXY_EXCLUDE"] = "intranet.example";
  auto s = load_now();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error(), HasSubstr("no parent proxy"));
}

}  // namespace
}  // namespace sandgate::settings
