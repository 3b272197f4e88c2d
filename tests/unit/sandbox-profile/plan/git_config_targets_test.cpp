// What git's configuration points at outside the git folder: the reader of git's format against
// the cases git itself accepts, and the targets found in a scratch repository, includes followed.
#include "sandbox-profile/plan/git_config_targets.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace sandgate::sandbox {
namespace {

namespace fs = std::filesystem;
using Values = std::vector<std::string>;

TEST(GitConfigValues, ReadsValuesAsGitDoes) {
  struct Case {
    const char* text;
    const char* section;
    const char* key;
    Values expected;
  };
  const Case cases[] = {
      {"[core]\n\thooksPath = .husky/_\n", "core", "hookspath", {".husky/_"}},
      {"[CORE]\nHOOKSPATH=x\n", "core", "hooksPath", {"x"}},
      {"[core] hooksPath = same-line\n", "core", "hookspath", {"same-line"}},
      {"[core]\n  hooksPath = \"a b\" # comment\n", "core", "hookspath", {"a b"}},
      {"[core]\n  hooksPath = a;b\n", "core", "hookspath", {"a"}},
      {"[core]\n  hooksPath = \"a;b\"\n", "core", "hookspath", {"a;b"}},
      {"[core]\n  hooksPath = one\\\ntwo\n", "core", "hookspath", {"onetwo"}},
      {"[core]\n  hooksPath = a\\\\b\n", "core", "hookspath", {"a\\b"}},
      {"[core]\n  hooksPath = trailing   \n", "core", "hookspath", {"trailing"}},
      {"[core]\n  hooksPath\n", "core", "hookspath", {"true"}},
      {"[remote \"core\"]\n  hooksPath = no\n", "core", "hookspath", {}},
      {"# [core]\n; hooksPath = no\n", "core", "hookspath", {}},
      {"[include]\npath = a\n[include]\npath = b\n", "include", "path", {"a", "b"}},
      {"[includeIf \"gitdir:~/src/\"]\n  path = c\n", "includeif", "path", {"c"}},
      {"[core.sub]\n  hooksPath = old-style\n", "core", "hookspath", {"old-style"}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(git_config_values(c.text, c.section, c.key), c.expected) << c.text;
  }
}

TEST(GitConfigTargets, FindsTheHooksFolderAndEveryIncludedFile) {
  std::string templ = (fs::temp_directory_path() / "sandgate-gct-XXXXXX").string();
  ASSERT_NE(::mkdtemp(templ.data()), nullptr);
  const std::string root = templ;
  fs::create_directories(root + "/home/.config/git");
  fs::create_directories(root + "/project/.git");
  std::ofstream(root + "/home/.gitconfig") << "[include]\n\tpath = ~/extra.inc\n";
  std::ofstream(root + "/home/extra.inc") << "[include]\n\tpath = nested.inc\n";
  std::ofstream(root + "/project/.git/config")
      << "[core]\n\thooksPath = .husky/_\n[includeIf \"onbranch:main\"]\n\tpath = ../team.inc\n";
  const GitConfigTargets targets =
      git_config_targets({root + "/project/.git"}, root + "/project", root + "/home");
  EXPECT_EQ(targets.hook_folders, Values{root + "/project/.husky/_"});
  EXPECT_EQ(targets.included_files, (Values{root + "/home/extra.inc", root + "/home/nested.inc",
                                            root + "/project/team.inc"}));
  fs::remove_all(root);
}

}  // namespace
}  // namespace sandgate::sandbox
