// The user's sentinel key (made once, private, refused when it is a link, open to others or the
// wrong size) and the sentinels drawn from it: the same for the same name and value, another for
// another name, value or key, and never the value itself.
#include "proxy/secrets/stable_sentinel.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "proxy/secrets/masked_secrets.hpp"

namespace sandgate::secrets {
namespace {

namespace fs = std::filesystem;

class StableSentinel : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::string(::testing::TempDir()) + "/stable-sentinel-XXXXXX";
    ASSERT_NE(::mkdtemp(folder_.data()), nullptr);
  }
  void TearDown() override { fs::remove_all(folder_); }
  std::string folder_;
};

std::string sentinel(const SentinelKey& key, const std::string& name, const std::string& value) {
  StableSentinelBytes bytes(key, name, value);
  return make_sentinel(value, [&bytes] { return bytes(); });
}

TEST_F(StableSentinel, TheKeyIsMadeOncePrivateAndReadBackTheSame) {
  const std::string path = folder_ + "/sentinel.key";
  auto made = load_or_make_sentinel_key(path);
  ASSERT_TRUE(made.has_value()) << made.error();
  struct stat info {};
  ASSERT_EQ(::lstat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600U);
  EXPECT_EQ(info.st_size, 32);
  auto read = load_or_make_sentinel_key(path);
  ASSERT_TRUE(read.has_value()) << read.error();
  EXPECT_EQ(*made, *read);
  // No temporary file is left beside it.
  EXPECT_EQ(std::distance(fs::directory_iterator(folder_), fs::directory_iterator()), 1);
}

TEST_F(StableSentinel, AKeyThatIsALinkOpenToOthersOrOfAnotherSizeIsRefused) {
  const std::string path = folder_ + "/sentinel.key";
  ASSERT_TRUE(load_or_make_sentinel_key(folder_ + "/real.key").has_value());
  ASSERT_EQ(::symlink((folder_ + "/real.key").c_str(), path.c_str()), 0);
  auto linked = load_or_make_sentinel_key(path);
  ASSERT_FALSE(linked.has_value());
  EXPECT_NE(linked.error().find("symbolic link"), std::string::npos) << linked.error();
  EXPECT_NE(linked.error().find(path), std::string::npos) << linked.error();

  ::chmod((folder_ + "/real.key").c_str(), 0644);
  auto open_to_others = load_or_make_sentinel_key(folder_ + "/real.key");
  ASSERT_FALSE(open_to_others.has_value());
  EXPECT_NE(open_to_others.error().find("open to other users"), std::string::npos);

  const std::string short_key = folder_ + "/short.key";
  std::ofstream(short_key) << "too short";
  ::chmod(short_key.c_str(), 0600);
  auto wrong_size = load_or_make_sentinel_key(short_key);
  ASSERT_FALSE(wrong_size.has_value());
  EXPECT_NE(wrong_size.error().find("32 bytes"), std::string::npos) << wrong_size.error();
}

TEST_F(StableSentinel, TheSameNameAndValueGiveTheSameSentinelAndNothingElseDoes) {
  SentinelKey key{};
  key.fill(7);
  SentinelKey other_key = key;
  other_key[31] = 8;
  const std::string value = "ghp_RealTokenRealTokenRealToken0123456789";
  const std::string first = sentinel(key, "GITHUB_TOKEN", value);
  ASSERT_EQ(first.size(), value.size());
  EXPECT_TRUE(first.starts_with("ghp_")) << first;
  EXPECT_NE(first, value);
  EXPECT_EQ(sentinel(key, "GITHUB_TOKEN", value), first);
  EXPECT_NE(sentinel(key, "GH_TOKEN", value), first);
  EXPECT_NE(sentinel(key, "GITHUB_TOKEN", "ghp_OtherTokenOtherTokenOtherToken01234567"), first);
  EXPECT_NE(sentinel(other_key, "GITHUB_TOKEN", value), first);
}

TEST_F(StableSentinel, LoadingWithAKeyGivesEachSecretItsStableSentinel) {
  SentinelKey key{};
  key.fill(3);
  const std::vector<SecretSpec> specs = {*parse_secret_spec("GITHUB_TOKEN=api.github.com")};
  const auto environment = [](const std::string&) -> std::optional<std::string> {
    return "ghp_RealTokenRealTokenRealToken0123456789";
  };
  auto first = MaskedSecrets::load(specs, environment, &key);
  auto second = MaskedSecrets::load(specs, environment, &key);
  auto random = MaskedSecrets::load(specs, environment);
  ASSERT_TRUE(first && second && random);
  EXPECT_EQ((*first)->all()[0].sentinel, (*second)->all()[0].sentinel);
  EXPECT_NE((*first)->all()[0].sentinel, (*random)->all()[0].sentinel);
}

}  // namespace
}  // namespace sandgate::secrets
