// The files tools run or trust by themselves: which relative paths are listed at any depth, and
// which of them are protected at the top of a working folder (auto_run_paths()).
#include "sandbox-profile/plan/auto_run_files.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "sandbox-profile/plan/protected_paths.hpp"

namespace sandgate::sandbox {
namespace {

TEST(AutoRunFiles, ListedFilesAreFoundAtAnyDepth) {
  for (const char* path : {".envrc",
                           "sub/.envrc",
                           "a/b/c/.envrc",
                           ".vscode/mcp.json",
                           "web/.vscode/tasks.json",
                           ".cargo/config.toml",
                           "crates/x/.cargo/config",
                           ".npmrc",
                           "packages/web/.npmrc",
                           ".yarnrc.yml",
                           ".yarnrc",
                           ".pnpmfile.cjs",
                           "mise.toml",
                           "sub/.mise.toml",
                           ".tool-versions",
                           ".python-version",
                           "CLAUDE.md",
                           "sub/AGENTS.md",
                           ".goosehints",
                           ".github/copilot-instructions.md",
                           ".devcontainer.json",
                           ".config/mise.toml",
                           "lefthook.yml",
                           ".mcp.json",
                           ".gitmodules",
                           ".dir-locals.el",
                           ".nvim.lua"}) {
    EXPECT_TRUE(is_auto_run_file(path)) << path;
  }
  for (const char* path :
       {"notes.txt", "x.envrc", ".envrc.bak", "sub/my.npmrc", "config.toml", "cargo/config.toml",
        ".vscode/notes.md", "src/CLAUDE.md.txt", "docs/agents.md", "github/copilot-instructions.md",
        ".cargo/credentials.toml"}) {
    EXPECT_FALSE(is_auto_run_file(path)) << path;
  }
}

TEST(AutoRunFiles, ListedFoldersAreFoundAtAnyDepth) {
  for (const char* path : {".claude", "sub/.claude", ".cursor", ".gemini", ".devcontainer", ".idea",
                           "a/.zed", ".husky", ".github/instructions", ".config/mise"}) {
    EXPECT_TRUE(is_auto_run_folder(path)) << path;
  }
  for (const char* path : {"claude", ".github", ".vscode", ".config", "src", "x.idea"}) {
    EXPECT_FALSE(is_auto_run_folder(path)) << path;
  }
}

// Second review: a link at a listed folder's name, or at a folder on the way to a listed file,
// leads the tool elsewhere (`sub/.vscode -> ../assets`): those names are looked up too.
TEST(AutoRunFiles, NamesToolsLookUpIncludeTheFoldersOnTheWay) {
  for (const char* path : {".vscode", "sub1/.vscode", ".claude", "sub2/.claude", ".devcontainer",
                           "sub3/.devcontainer", ".cargo", ".github", ".config", "a/.config/mise",
                           ".envrc", ".vscode/tasks.json", ".github/instructions"}) {
    EXPECT_TRUE(is_auto_run_name(path)) << path;
  }
  for (const char* path : {"vscode", "assets", "x.vscode", ".vscode/notes.md", "docs/x",
                           ".cargo/credentials.toml", "config", ".github/workflows"}) {
    EXPECT_FALSE(is_auto_run_name(path)) << path;
  }
}

TEST(AutoRunFiles, FilesBelowAListedFolderAreReadAtAnyDepth) {
  for (const char* path :
       {".claude/commands/x.md", "sub/.config/mise/config.toml", ".vscode/tasks.json",
        "a/.idea/b/c.xml", ".devcontainer/devcontainer.json"}) {
    EXPECT_TRUE(is_auto_run_path(path)) << path;
  }
  for (const char* path :
       {".vscode/notes.md", "claude/x", ".config/git/config", "src/main.cpp", ".claude"}) {
    EXPECT_FALSE(is_auto_run_path(path)) << path;
  }
}

// At the top, every name but the one the work writes as often as not is protected.
TEST(AutoRunFiles, TheTopsAreProtectedButPythonVersion) {
  const auto paths = auto_run_paths("/w");
  const auto has = [&paths](const std::string& path, bool tree) {
    return std::any_of(paths.begin(), paths.end(), [&](const ProtectedPath& p) {
      return p.path == path && p.tree == tree && !p.always;
    });
  };
  for (const char* file : {"/w/.vscode/mcp.json", "/w/.cargo/config.toml", "/w/.cargo/config",
                           "/w/.npmrc", "/w/.yarnrc.yml", "/w/.yarnrc", "/w/.pnpmfile.cjs",
                           "/w/mise.toml", "/w/.mise.toml", "/w/.tool-versions", "/w/CLAUDE.md",
                           "/w/AGENTS.md", "/w/.github/copilot-instructions.md", "/w/.envrc"}) {
    EXPECT_TRUE(has(file, false)) << file;
  }
  for (const char* folder : {"/w/.cursor", "/w/.devcontainer", "/w/.claude", "/w/.gemini"}) {
    EXPECT_TRUE(has(folder, true)) << folder;
  }
  EXPECT_FALSE(has("/w/.python-version", false));
  EXPECT_EQ(auto_run_paths("/").front().path, "/.vscode/tasks.json");
}

}  // namespace
}  // namespace sandgate::sandbox
