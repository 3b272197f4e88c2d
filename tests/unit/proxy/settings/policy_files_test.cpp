// Reading policy files (settings/policy_loader): what counts as blank, resolving a path once,
// and reading only the file at exactly the resolved path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "proxy/settings/policy_loader.hpp"

namespace sandgate::settings {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class PolicyFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/sandgate-files-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    folder_ = fs::canonical(pattern).string();
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(folder_, ignored);
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = folder_ + "/" + name;
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::string folder_;
};

TEST(PolicyFiles, BlankIsNothingButWhitespace) {
  struct Case {
    std::string text;
    bool blank;
  };
  const Case cases[] = {
      {"", true},
      {"\n", true},
      {" \t\r\n\v\f", true},
      {"\xEF\xBB\xBF", true},  // a byte-order mark alone
      {"\xEF\xBB\xBF\n\n", true},
      {"#", false},  // a comment: an intended empty list
      {"# nothing blocked\n", false},
      {"evil.com", false},
      {std::string("\0", 1), false},  // NUL is no whitespace: reported as not text instead
      {"\xC2\xA0", false},            // a no-break space is not ASCII whitespace
  };
  for (const auto& c : cases) {
    EXPECT_EQ(is_blank(c.text), c.blank) << "'" << c.text << "'";
  }
}

TEST_F(PolicyFilesTest, ResolvePathFollowsSymlinksOnce) {
  const std::string real = write("real/allow.txt", "x\n");
  fs::create_directory_symlink("real", folder_ + "/cfg");
  EXPECT_EQ(resolve_path(folder_ + "/cfg/allow.txt"), real);
  EXPECT_EQ(resolve_path(folder_ + "/cfg/../real/./allow.txt"), real);
  // A file not there yet is resolved through its folder.
  EXPECT_EQ(resolve_path(folder_ + "/cfg/later.txt"), folder_ + "/real/later.txt");
  // A folder that does not exist: as given.
  EXPECT_EQ(resolve_path(folder_ + "/none/x.txt"), folder_ + "/none/x.txt");

  Settings s;
  s.blocklist_path = folder_ + "/cfg/allow.txt";
  s.allowlist_path = "";
  s.config_path = folder_ + "/cfg/allow.txt";
  const Settings resolved = with_resolved_paths(s);
  EXPECT_EQ(resolved.blocklist_path, real);
  EXPECT_EQ(resolved.allowlist_path, "");
  EXPECT_EQ(resolved.config_path, real);
}

TEST_F(PolicyFilesTest, ReadFileAtReadsOnlyTheFileAtThatPath) {
  const std::string real = write("real/allow.txt", "allowed.test\n");
  write("evil/allow.txt", "evil.test\n");
  auto text = read_file_at(real);
  ASSERT_TRUE(text) << text.error();
  EXPECT_EQ(*text, "allowed.test\n");

  // The folder on the way becomes a symlink to another folder: refused, naming both.
  fs::rename(folder_ + "/real", folder_ + "/moved");
  fs::create_directory_symlink("evil", folder_ + "/real");
  auto through = read_file_at(real);
  ASSERT_FALSE(through);
  EXPECT_THAT(through.error(), HasSubstr(real + ": now leads to " + folder_ + "/evil/allow.txt"));

  // The file itself replaced by a symlink: refused.
  fs::remove(folder_ + "/real");
  fs::rename(folder_ + "/moved", folder_ + "/real");
  fs::remove(real);
  fs::create_symlink(folder_ + "/evil/allow.txt", real);
  EXPECT_FALSE(read_file_at(real));

  // A folder, a FIFO (must not block), a missing file: errors naming the path.
  EXPECT_THAT(read_file_at(folder_).error(), HasSubstr(folder_ + ": is a folder, not a file"));
  const std::string fifo = folder_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(read_file_at(fifo).error(), HasSubstr(fifo + ": is not a regular file"));
  EXPECT_THAT(read_file_at(folder_ + "/missing").error(), HasSubstr("No such file"));
}

TEST_F(PolicyFilesTest, PinnedFileNamesTheSameOpenFile) {
  const std::string path = write("config.toml", "allow_ip = true\n");
  auto pinned = PinnedFile::open(path);
  ASSERT_TRUE(pinned) << pinned.error();
  // Replaced after opening: the pinned file still reads what was checked.
  const std::string other = write("other.toml", "allow_ip = false\n");
  fs::rename(other, path);
  std::ifstream in((*pinned)->descriptor_path());
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "allow_ip = true");
}

// load_policy reads the resolved files and says which they are.
TEST_F(PolicyFilesTest, LoadPolicyReadsTheResolvedFiles) {
  const std::string real = write("real/blocked.txt", "evil.test\n");
  write("real/allow.txt", "# none yet\n");
  fs::create_directory_symlink("real", folder_ + "/cfg");
  Settings s;
  s.blocklist_path = folder_ + "/cfg/blocked.txt";
  s.blocklist_is_default = false;
  s.allowlist_path = folder_ + "/cfg/allow.txt";
  auto loaded = load_policy(s, MissingDefaultBlocklist::use_template);
  ASSERT_TRUE(loaded) << loaded.error();
  EXPECT_EQ(loaded->blocklist_path, real);
  EXPECT_EQ(loaded->allowlist_path, folder_ + "/real/allow.txt");
  EXPECT_EQ(loaded->policy->blocklist().size(), 1u);
  ASSERT_NE(loaded->policy->allowlist(), nullptr);
  EXPECT_EQ(loaded->policy->allowlist()->size(), 0u);  // comments only: a real, empty list
  // An empty blocklist at start-up is an empty list, not an error.
  write("real/blocked.txt", "");
  auto empty = load_policy(s, MissingDefaultBlocklist::use_template);
  ASSERT_TRUE(empty) << empty.error();
  EXPECT_EQ(empty->policy->blocklist().size(), 0u);
}

}  // namespace
}  // namespace sandgate::settings
