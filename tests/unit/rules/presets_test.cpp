// The bundled allowlist presets (config/presets/*.txt): every line of each is a usable entry or
// a comment, every entry says why it is there, and the presets allow what they promise and
// nothing next to it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "rules/domain_set.hpp"
#include "rules/host.hpp"

namespace sandgate::rules {
namespace {

const std::filesystem::path kPresets =
    std::filesystem::path(SANDGATE_SOURCE_DIR) / "config/presets";

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool allows(const DomainSet& set, const char* host, std::uint16_t port) {
  auto parsed = parse_host(host);
  EXPECT_TRUE(parsed.has_value()) << host;
  return parsed && set.match(*parsed, port).has_value();
}

TEST(Presets, EveryLineOfEveryPresetIsUsableAndExplained) {
  std::size_t presets = 0;
  for (const auto& file : std::filesystem::directory_iterator(kPresets)) {
    if (file.path().extension() != ".txt") {
      continue;
    }
    ++presets;
    const std::string text = read(file.path());
    std::vector<LoadIssue> issues;
    const DomainSet set = DomainSet::parse(text, file.path().string(), issues);
    for (const auto& issue : issues) {
      ADD_FAILURE() << issue.source << ":" << issue.line << ": " << issue.text << ": "
                    << issue.message;
    }
    EXPECT_GT(set.size(), 0u) << file.path();
    // An entry without a comment is an entry nobody can review.
    std::istringstream lines(text);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
      const auto start = line.find_first_not_of(" \t");
      if (start == std::string::npos || line[start] == '#') {
        continue;
      }
      EXPECT_NE(line.find('#'), std::string::npos)
          << file.path().filename().string() << ":" << number << ": '" << line
          << "' has no comment saying why it is allowed";
    }
  }
  EXPECT_GE(presets, 1u);
}

TEST(Presets, DevAllowsTheRegistriesGitHostsAndModelApisOnlyOnTheirPorts) {
  std::vector<LoadIssue> issues;
  const DomainSet dev = DomainSet::parse(read(kPresets / "dev.txt"), "dev.txt", issues);
  for (const char* host :
       {"registry.npmjs.org", "pypi.org", "files.pythonhosted.org", "index.crates.io",
        "static.crates.io", "proxy.golang.org", "repo.maven.apache.org", "rubygems.org",
        "api.github.com", "objects.githubusercontent.com", "gitlab.com", "api.anthropic.com",
        "api.openai.com", "generativelanguage.googleapis.com"}) {
    EXPECT_TRUE(allows(dev, host, 443)) << host;
  }
  EXPECT_TRUE(allows(dev, "deb.debian.org", 80));
  EXPECT_TRUE(allows(dev, "github.com", 22));
  EXPECT_FALSE(allows(dev, "registry.npmjs.org", 80));
  EXPECT_FALSE(allows(dev, "pypi.org", 22));
  for (const char* host : {"example.com", "npmjs.org.evil.example", "notgithub.com",
                           "storage.googleapis.com", "pastebin.com", "api.anthropic.com.evil"}) {
    EXPECT_FALSE(allows(dev, host, 443)) << host;
  }
}

DomainSet preset(const char* file) {
  std::vector<LoadIssue> issues;
  DomainSet set = DomainSet::parse(read(kPresets / file), file, issues);
  EXPECT_TRUE(issues.empty()) << file;
  return set;
}

TEST(Presets, AgentPresetsAllowTheirApisAndSignInAndNoTelemetryHost) {
  const DomainSet claude = preset("claude-code.txt");
  for (const char* host : {"api.anthropic.com", "platform.claude.com", "claude.ai"}) {
    EXPECT_TRUE(allows(claude, host, 443)) << host;
  }
  const DomainSet codex = preset("codex.txt");
  for (const char* host : {"api.openai.com", "chatgpt.com", "auth.openai.com"}) {
    EXPECT_TRUE(allows(codex, host, 443)) << host;
  }
  // No telemetry host; error reports (a host every Sentry customer receives at) and update
  // downloads (a bucket host any project can serve from) in none.
  EXPECT_FALSE(allows(claude, "statsig.anthropic.com", 443));
  for (const char* file : {"claude-code.txt", "codex.txt"}) {
    const DomainSet set = preset(file);
    for (const char* host : {"sentry.io", "o1.ingest.sentry.io", "storage.googleapis.com",
                             "api.anthropic.com.evil", "github.com"}) {
      EXPECT_FALSE(allows(set, host, 443)) << file << " " << host;
    }
    EXPECT_FALSE(allows(set, "api.anthropic.com", 80)) << file;
  }
}

}  // namespace
}  // namespace sandgate::rules
