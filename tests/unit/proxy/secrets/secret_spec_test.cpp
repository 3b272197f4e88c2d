// The --secret entry's syntax (proxy/secrets/secret_spec.hpp).
#include "proxy/secrets/secret_spec.hpp"

#include "proxy/secrets/known_credentials.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>

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
           "MY_TOKEN",                        // no hosts, and no known ones
           "MY_TOKEN=",                       // empty list
           "MY_TOKEN==@/run/token",           // the same, with a source
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

// Issue 42: an agent's own key is kept outside with one word. A known credential's entry may
// leave out its hosts (NAME, or NAME==SOURCE); they are the API hosts the table names.
TEST(SecretSpec, AKnownCredentialWithoutHostsIsBoundToItsApiHosts) {
  auto anthropic = parse_secret_spec("ANTHROPIC_API_KEY");
  ASSERT_TRUE(anthropic) << anthropic.error();
  EXPECT_EQ(anthropic->hosts, std::vector<std::string>{"api.anthropic.com"});
  EXPECT_EQ(anthropic->source, SecretSource::variable);
  EXPECT_EQ(anthropic->from, "ANTHROPIC_API_KEY");
  auto github = parse_secret_spec("GITHUB_TOKEN==!gh auth token");
  ASSERT_TRUE(github) << github.error();
  EXPECT_EQ(github->hosts,
            (std::vector<std::string>{"github.com", "api.github.com", "uploads.github.com"}));
  EXPECT_EQ(github->source, SecretSource::command);
  EXPECT_EQ(github->from, "gh auth token");
  EXPECT_EQ(secret_spec_text(*github),
            "GITHUB_TOKEN=github.com,api.github.com,uploads.github.com=!gh auth token");
  auto aws = parse_secret_spec("AWS_SESSION_TOKEN");
  ASSERT_TRUE(aws);
  EXPECT_TRUE(secret_bound_to(*aws, "s3.us-east-1.amazonaws.com"));
  // Hosts written out still win.
  auto own = parse_secret_spec("OPENAI_API_KEY=llm.internal.example");
  ASSERT_TRUE(own);
  EXPECT_EQ(own->hosts, std::vector<std::string>{"llm.internal.example"});
  // Every table entry parses as the entry it stands for: its hosts are valid bound hosts.
  for (const KnownCredential& known : known_credentials()) {
    auto spec = parse_secret_spec(known.variable);
    ASSERT_TRUE(spec) << known.variable << ": " << spec.error();
    EXPECT_FALSE(spec->hosts.empty()) << known.variable;
  }
  auto unknown = parse_secret_spec("MY_TOKEN");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("Known credentials"), std::string::npos) << unknown.error();
}

TEST(KnownCredentials, TheSetOnesNotNamedAlreadyAreFoundInTheTablesOrder) {
  const std::map<std::string, std::string> environment = {{"GITHUB_TOKEN", "ghp_x"},
                                                          {"ANTHROPIC_API_KEY", "sk-ant-x"},
                                                          {"OPENAI_API_KEY", ""},
                                                          {"NPM_TOKEN", "npm_x"},
                                                          {"MY_TOKEN", "not known"}};
  const auto lookup = [&](const std::string& name) -> std::optional<std::string> {
    const auto found = environment.find(name);
    return found == environment.end() ? std::nullopt : std::optional(found->second);
  };
  const std::vector<std::string> named = {"NPM_TOKEN"};
  std::vector<std::string> found;
  for (const KnownCredential* known : known_credentials_set(lookup, named)) {
    found.emplace_back(known->variable);
  }
  // Set and not empty, not named by a --secret already; an unknown name is never taken.
  EXPECT_EQ(found, (std::vector<std::string>{"ANTHROPIC_API_KEY", "GITHUB_TOKEN"}));
}

}  // namespace
}  // namespace sandgate::secrets
