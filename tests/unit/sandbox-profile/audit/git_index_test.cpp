// The index entries git status does not look at, read from indexes the real git writes (versions
// 2, 3 and 4, SHA-1 and SHA-256), and what is not an index.
#include "sandbox-profile/audit/git_index.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sandgate::sandbox {
namespace {

namespace fs = std::filesystem;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class GitIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "sandgate-index-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    root_ = templ;
  }
  void TearDown() override { fs::remove_all(root_); }
  // A repository with files of long and shared names (version 4 compresses them), some marked.
  std::string index_of(const std::string& init, int version) {
    const std::string repo = root_ + "/repo-" + std::to_string(version) + init.substr(0, 2);
    const std::string command =
        "git init -q " + init + " '" + repo + "' && cd '" + repo +
        "' && mkdir -p src/deeply/nested && for f in a.sh src/deeply/nested/long-name-one.sh "
        "src/deeply/nested/long-name-two.sh z.sh; do echo x > $f; done && git add . && "
        "git update-index --index-version " +
        std::to_string(version) +
        " && git update-index --skip-worktree src/deeply/nested/long-name-two.sh && "
        "git update-index --assume-unchanged a.sh z.sh";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return read_bytes(repo + "/.git/index");
  }
  std::string root_;
};

TEST_F(GitIndexTest, NamesSkipWorktreeAndAssumeUnchangedEntriesInEveryVersion) {
  for (int version : {2, 3, 4}) {
    for (const auto& [init, hash] :
         {std::pair{std::string(), std::size_t{20}},
          std::pair{std::string("--object-format=sha256"), std::size_t{32}}}) {
      const HiddenIndexEntries hidden = hidden_index_entries(index_of(init, version), hash);
      EXPECT_TRUE(hidden.parsed) << version << init;
      EXPECT_EQ(hidden.skip_worktree, (std::set<std::string>{"src/deeply/nested/long-name-two.sh"}))
          << version << init;
      EXPECT_EQ(hidden.assume_unchanged, (std::set<std::string>{"a.sh", "z.sh"}))
          << version << init;
    }
  }
}

TEST_F(GitIndexTest, WhatIsNotAnIndexIsSaidSo) {
  const std::string index = index_of("", 2);
  for (const std::string& bytes : {std::string(), std::string("DIRC"), std::string("not an index"),
                                   index.substr(0, index.size() / 2)}) {
    const HiddenIndexEntries hidden = hidden_index_entries(bytes, 20);
    EXPECT_FALSE(hidden.parsed);
    EXPECT_TRUE(hidden.skip_worktree.empty());
  }
}

}  // namespace
}  // namespace sandgate::sandbox
