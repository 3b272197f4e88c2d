// The --secret entry's syntax (proxy/secrets/secret_spec.hpp).
#include "proxy/secrets/secret_spec.hpp"

#include <gtest/gtest.h>

namespace sandgate::secrets {
namespace {

TEST(SecretSpec, NamesHostsAndEachSource) {
  auto plain = parse_secret_spec("GITHUB_TOKEN=api.github.com,GitHub.com.,api.github.com");
  ASSERT_TRUE(plain) << plain.error();
  EXPECT_EQ(plain->name, "GITHUB_TOKEN");
  EXPECT_EQ(plain->hosts, (std::vector<std::string>{"api.github.com", "github.com"}));
  EXPECT_EQ(plain->source, SecretSource::variable);
  EXPECT_EQ(plain->from, "GITHUB_TOKEN");
  EXPECT_EQ(secret_spec_text(*plain), "GITHUB_TOKEN=api.github.com,github.com");

  auto file = parse_secret_spec("NPM_TOKEN=registry.npmjs.org=@/run/npm token");
  ASSERT_TRUE(file) << file.error();
  EXPECT_EQ(file->source, SecretSource::file);
  EXPECT_EQ(file->from, "/run/npm token");

  // A command keeps every '=' and ',' of its own.
  auto command = parse_secret_spec("GH=api.github.com=!pass show gh=x,y");
  ASSERT_TRUE(command) << command.error();
  EXPECT_EQ(command->source, SecretSource::command);
  EXPECT_EQ(command->from, "pass show gh=x,y");

  auto other = parse_secret_spec("AWS_SECRET_ACCESS_KEY=*.amazonaws.com=$REAL_KEY");
  ASSERT_TRUE(other) << other.error();
  EXPECT_EQ(other->from, "REAL_KEY");
  EXPECT_EQ(other->hosts, (std::vector<std::string>{"*.amazonaws.com"}));
  EXPECT_TRUE(secret_bound_to(*other, "sts.amazonaws.com"));
  EXPECT_TRUE(secret_bound_to(*other, "s3.eu-west-1.amazonaws.com"));
  EXPECT_FALSE(secret_bound_to(*other, "amazonaws.com"));
  EXPECT_FALSE(secret_bound_to(*other, "evilamazonaws.com"));
  EXPECT_FALSE(secret_bound_to(*plain, "gist.github.com"));
  EXPECT_TRUE(secret_bound_to(*plain, "github.com"));
}

TEST(SecretSpec, RefusesWhatWouldSendASecretFurtherThanMeant) {
  for (const char* bad : {
           "GITHUB_TOKEN",                    // no hosts
           "GITHUB_TOKEN=",                   // empty list
           "GITHUB_TOKEN=github.com,,x.org",  // an empty item
           "1TOKEN=github.com",               // not a variable name
           "MY-TOKEN=github.com",             // not a variable name
           "T=127.0.0.1",                     // an address
           "T=[::1]",                         // an address
           "T=com",                           // a single label
           "T=*.com",                         // a whole top-level domain
           "T=*",                             // everything
           "T=git*.com",                      // a wildcard inside a label
           "T=github.com:443",                // a port
           "T=user@github.com",               // userinfo
           "T=github.com=%x",                 // an unknown source
           "T=github.com=$1X",                // not a variable
           "T=github.com=@",                  // an empty source
       }) {
    EXPECT_FALSE(parse_secret_spec(bad)) << bad;
  }
  // The messages never quote a value: there is none in the entry, and names are cut short.
  auto long_name = parse_secret_spec(std::string(300, 'A') + "-=x.org");
  ASSERT_FALSE(long_name);
  EXPECT_LT(long_name.error().size(), 200u);
}

}  // namespace
}  // namespace sandgate::secrets
