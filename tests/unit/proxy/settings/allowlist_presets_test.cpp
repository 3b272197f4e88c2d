// The allowlist setting with bundled presets (`--allowlist preset:dev`, alone, with a file, from
// each source): the embedded presets are the files in config/presets and parse cleanly, a
// preset's rules name it and their line, an unknown preset is an error naming the known ones,
// and a preset and a file both apply.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "config/embedded_defaults.hpp"
#include "proxy/settings/load.hpp"
#include "proxy/settings/policy_loader.hpp"
#include "proxy/settings/settings.hpp"
#include "rules/host.hpp"

namespace sandgate::settings {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const fs::path kPresets = fs::path(SANDGATE_SOURCE_DIR) / "config/presets";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The 1-based line of `entry` (the line's start) in `text`; 0 when absent.
std::uint32_t line_of(const std::string& text, std::string_view entry) {
  std::istringstream lines(text);
  std::uint32_t number = 1;
  for (std::string line; std::getline(lines, line); ++number) {
    if (line.starts_with(entry)) {
      return number;
    }
  }
  return 0;
}

class AllowlistPresets : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "sandgate-presets-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    home_ = pattern;
    // An empty blocklist of the test's own, so that nothing is written at the default path.
    blocklist_ = write("blocked.txt", "# nothing\n");
    flags_["--blocklist"] = blocklist_;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(home_, ec);
  }

  std::string write(const std::string& name, const std::string& text) const {
    const fs::path path = fs::path(home_) / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }

  Expected<Settings, std::string> load_settings() const {
    Sources s;
    s.flags = flags_;
    s.env = [env = env_](std::string_view name) -> std::optional<std::string> {
      auto it = env.find(std::string(name));
      return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    s.home = home_;
    return load(s);
  }

  // The decision for host:443 under the settings' policy.
  rules::Decision decide(const Settings& settings, const char* host, std::uint16_t port = 443) {
    auto loaded = load_policy(settings, MissingDefaultBlocklist::use_template);
    EXPECT_TRUE(loaded.has_value()) << (loaded ? "" : loaded.error());
    EXPECT_TRUE(loaded->issues.empty());
    policies_.push_back(loaded->policy);  // the decision's rule points into it
    return loaded->policy->decide(*rules::parse_host(host), port);
  }

  std::string home_;
  std::string blocklist_;
  std::map<std::string, std::string> env_;
  std::map<std::string, std::string, std::less<>> flags_;
  std::vector<std::shared_ptr<const rules::Policy>> policies_;
};

TEST(EmbeddedPresets, AreTheFilesOfConfigPresetsAndEveryLineParses) {
  std::size_t files = 0;
  for (const auto& file : fs::directory_iterator(kPresets)) {
    if (file.path().extension() == ".txt") {
      ++files;
      const auto preset = defaults::find_preset(file.path().stem().string());
      ASSERT_TRUE(preset.has_value()) << file.path() << " is not embedded";
      EXPECT_EQ(preset->text, read_file(file.path())) << file.path();
    }
  }
  EXPECT_EQ(defaults::presets().size(), files);
  ASSERT_TRUE(defaults::find_preset("dev").has_value());
  for (const auto& preset : defaults::presets()) {
    std::vector<rules::LoadIssue> issues;
    const auto set = build_allowlist({std::string(preset.name)}, {}, {}, issues);
    EXPECT_TRUE(issues.empty()) << preset.name << ": " << issues.front().line << ": "
                                << issues.front().message;
    EXPECT_GT(set.size(), 0u) << preset.name;
  }
  EXPECT_EQ(defaults::preset_names(), "claude-code, codex, dev");
}

TEST_F(AllowlistPresets, APresetAloneIsAllowlistModeAndItsRulesNameThePresetAndLine) {
  flags_["--allowlist"] = "preset:dev";
  auto settings = load_settings();
  ASSERT_TRUE(settings.has_value()) << settings.error();
  EXPECT_THAT(settings->allowlist_presets, ElementsAre("dev"));
  EXPECT_EQ(settings->allowlist_path, "");

  const auto allowed = decide(*settings, "files.pythonhosted.org");
  ASSERT_TRUE(allowed.allowed());
  ASSERT_TRUE(allowed.rule.has_value());
  EXPECT_EQ(allowed.rule->source, "preset:dev");
  EXPECT_EQ(allowed.rule->line,
            line_of(read_file(kPresets / "dev.txt"), "files.pythonhosted.org:443"));
  EXPECT_EQ(allowed.rule->entry, "files.pythonhosted.org:443");

  const auto denied = decide(*settings, "example.com");
  EXPECT_FALSE(denied.allowed());
  EXPECT_EQ(denied.reason, rules::Reason::not_allowlisted);
}

TEST_F(AllowlistPresets, UnknownPresetIsAnErrorNamingTheKnownOnes) {
  flags_["--allowlist"] = "preset:devv";
  auto settings = load_settings();
  ASSERT_FALSE(settings.has_value());
  EXPECT_THAT(settings.error(), HasSubstr("--allowlist"));
  EXPECT_THAT(settings.error(), HasSubstr("no preset 'devv'"));
  EXPECT_THAT(settings.error(), HasSubstr("the bundled presets are: claude-code, codex, dev"));

  flags_.erase("--allowlist");
  env_["SANDGATE_ALLOWLIST"] = "preset:";
  settings = load_settings();
  ASSERT_FALSE(settings.has_value());
  EXPECT_THAT(settings.error(), HasSubstr("SANDGATE_ALLOWLIST"));
}

TEST_F(AllowlistPresets, APresetAndAFileBothApplyFromEverySource) {
  const std::string mine = write("allow.txt", "internal.example   # our own service\n");
  const std::string toml =
      write("sandgate.toml", "allowlist = [\"preset:dev\", \"" + mine + "\"]\n");
  const std::map<std::string, std::map<std::string, std::string, std::less<>>> flag_sets = {
      {"flag", {{"--allowlist", "preset:dev," + mine}}},
      {"flag, file first", {{"--allowlist", mine + ",preset:dev"}}},
      {"config file", {{"--config", toml}}},
  };
  for (const auto& [what, flags] : flag_sets) {
    SCOPED_TRACE(what);
    flags_ = flags;
    flags_["--blocklist"] = blocklist_;
    auto settings = load_settings();
    ASSERT_TRUE(settings.has_value()) << settings.error();
    EXPECT_THAT(settings->allowlist_presets, ElementsAre("dev"));
    EXPECT_EQ(settings->allowlist_path, mine);
    const auto own = decide(*settings, "api.internal.example");
    ASSERT_TRUE(own.allowed());
    EXPECT_EQ(own.rule->source, mine);
    EXPECT_EQ(own.rule->line, 1u);
    const auto preset = decide(*settings, "api.github.com", 22);
    ASSERT_TRUE(preset.allowed());
    EXPECT_EQ(preset.rule->source, "preset:dev");
    EXPECT_FALSE(decide(*settings, "example.com").allowed());
  }
  flags_ = {{"--blocklist", blocklist_}};
  env_["SANDGATE_ALLOWLIST"] = "preset:dev, " + mine;
  auto settings = load_settings();
  ASSERT_TRUE(settings.has_value()) << settings.error();
  EXPECT_EQ(settings->allowlist_path, mine);
  EXPECT_THAT(settings->allowlist_presets, ElementsAre("dev"));
}

TEST_F(AllowlistPresets, TwoFilesAreAnErrorAndAPresetNamedTwiceCountsOnce) {
  const std::string a = write("a.txt", "a.example # a\n");
  const std::string b = write("b.txt", "b.example # b\n");
  flags_["--allowlist"] = a + "," + b;
  auto settings = load_settings();
  ASSERT_FALSE(settings.has_value());
  EXPECT_THAT(settings.error(), HasSubstr("at most one allowlist file"));

  flags_["--allowlist"] = "preset:dev,preset:dev";
  settings = load_settings();
  ASSERT_TRUE(settings.has_value()) << settings.error();
  EXPECT_THAT(settings->allowlist_presets, ElementsAre("dev"));
}

}  // namespace
}  // namespace sandgate::settings
