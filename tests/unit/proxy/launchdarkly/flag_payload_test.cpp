// LaunchDarkly's JSON, read strictly: evaluation replies, patch and delete events, list values,
// the context sent, and base64url for the stream path.
#include "proxy/launchdarkly/flag_payload.hpp"

#include <gtest/gtest.h>

#include <string>

#include "rules/host.hpp"

namespace sandgate::launchdarkly {
namespace {

constexpr std::string_view kFlag = "egress-allowlist";

TEST(FlagPayload, ReadsTheFlagFromAnEvaluationReply) {
  auto flag = read_flag(
      R"({"egress-allowlist":{"value":true,"variation":0,"version":435,"flagVersion":9,"trackEvents":false},"other":{"value":1}})",
      kFlag);
  ASSERT_TRUE(flag.has_value());
  ASSERT_TRUE(flag->has_value());
  EXPECT_EQ((*flag)->value_json, "true");
  EXPECT_EQ((*flag)->version, 435u);
  EXPECT_TRUE(allows(**flag));
}

TEST(FlagPayload, OnlyJsonTrueAllows) {
  for (const std::string value : {"false", "null", "\"true\"", "1", "[true]", "{\"value\":true}"}) {
    auto flag = read_flag(R"({"egress-allowlist":{"value":)" + value + "}}", kFlag);
    ASSERT_TRUE(flag && *flag) << value;
    EXPECT_FALSE(allows(**flag)) << value;
  }
  // A flag without a value is null.
  auto missing_value = read_flag(R"({"egress-allowlist":{"version":3}})", kFlag);
  ASSERT_TRUE(missing_value && *missing_value);
  EXPECT_EQ((*missing_value)->value_json, "null");
}

TEST(FlagPayload, AbsentFlagIsNotAnError) {
  auto flag = read_flag(R"({"other":{"value":true}})", kFlag);
  ASSERT_TRUE(flag.has_value());
  EXPECT_FALSE(flag->has_value());
}

TEST(FlagPayload, MalformedRepliesAreErrors) {
  for (const std::string body : {"", "{", "[]", "true", "{\"egress-allowlist\":true}",
                                 R"({"egress-allowlist":{"value":true,"version":-1}})",
                                 R"({"egress-allowlist":{"value":true,"version":1.5}})",
                                 R"({"egress-allowlist":{"value":true,"version":"3"}})"}) {
    EXPECT_FALSE(read_flag(body, kFlag).has_value()) << body;
  }
  // A number no double can hold would come back as `Infinity`, which is not JSON.
  EXPECT_FALSE(read_flag(R"({"egress-allowlist":{"value":1e999}})", kFlag).has_value());
  EXPECT_FALSE(read_flag(R"({"egress-allowlist":{"value":[1,[-1E400]]}})", kFlag).has_value());
  EXPECT_TRUE(read_flag(R"({"egress-allowlist":{"value":1e300}})", kFlag).has_value());
  // Nesting beyond the limit is refused rather than recursed into.
  std::string deep = R"({"egress-allowlist":{"value":)" + std::string(kMaxJsonDepth, '[') +
                     std::string(kMaxJsonDepth, ']') + "}}";
  auto too_deep = read_flag(deep, kFlag);
  ASSERT_FALSE(too_deep.has_value());
  EXPECT_NE(too_deep.error().find("nesting limit"), std::string::npos) << too_deep.error();
  // A JSON flag nested 100 levels is an ordinary value, not an attack.
  std::string nested =
      R"({"egress-allowlist":{"value":)" + std::string(100, '[') + std::string(100, ']') + "}}";
  EXPECT_TRUE(read_flag(nested, kFlag).has_value());
  // So is an oversized reply.
  std::string huge =
      R"({"egress-allowlist":{"value":")" + std::string(kMaxPayloadBytes, 'a') + "\"}}";
  auto refused = read_flag(huge, kFlag);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().find("larger than"), std::string::npos);
  EXPECT_NE(refused.error().find("SANDGATE_LD_MAX_PAYLOAD"), std::string::npos);
  // The limit is the caller's (the setting).
  const std::string small = R"({"egress-allowlist":{"value":")" + std::string(2000, 'a') + "\"}}";
  EXPECT_FALSE(read_flag(small, kFlag, 1000).has_value());
  EXPECT_TRUE(read_flag(small, kFlag, 4000).has_value());
}

TEST(FlagPayload, PatchAndDelete) {
  auto patch = read_patch(R"({"key":"egress-allowlist","value":["a.com"],"version":7})");
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(patch->key, "egress-allowlist");
  EXPECT_EQ(patch->state.value_json, R"(["a.com"])");
  EXPECT_EQ(patch->state.version, 7u);

  auto deleted = read_delete(R"({"key":"egress-allowlist","version":8,"value":true})");
  ASSERT_TRUE(deleted.has_value());
  EXPECT_EQ(deleted->state.value_json, "null");  // a delete carries no value
  EXPECT_EQ(deleted->state.version, 8u);

  EXPECT_FALSE(read_patch(R"({"value":true,"version":1})").has_value());  // no key
  EXPECT_FALSE(read_patch(R"({"key":"x","value":true})").has_value());    // no version
  EXPECT_FALSE(read_patch(R"({"key":"","value":true,"version":1})").has_value());
  EXPECT_FALSE(read_delete("[1]").has_value());
}

TEST(FlagPayload, ListValuesCompileIntoADomainSet) {
  FlagState state;
  state.value_json =
      R"(["github.com", "*.npmjs.org", "re:^api[0-9]+\\.example\\.com$", "203.0.113.7:443",
          "bad host!", 42, "two\nlines.com"])";
  auto list = compile_list(state, "launchdarkly:egress-allowlist");
  ASSERT_TRUE(list.has_value());
  EXPECT_EQ(list->entries, 4u);
  ASSERT_EQ(list->issues.size(), 3u);
  EXPECT_EQ(list->issues[0].line, 5u);
  EXPECT_EQ(list->issues[1].message, "not a string");
  EXPECT_EQ(list->issues[2].message, "a line break inside an entry");

  auto match = [&](std::string_view name, std::uint16_t port) {
    auto host = rules::parse_host(name);
    return host && list->rules->match(*host, port).has_value();
  };
  EXPECT_TRUE(match("github.com", 443));
  EXPECT_TRUE(match("api.github.com", 443));
  EXPECT_TRUE(match("registry.npmjs.org", 443));
  EXPECT_FALSE(match("npmjs.org", 443));
  EXPECT_TRUE(match("api7.example.com", 443));
  EXPECT_TRUE(match("203.0.113.7", 443));
  EXPECT_FALSE(match("203.0.113.7", 80));
  EXPECT_FALSE(match("lines.com", 443));

  FlagState not_array;
  not_array.value_json = R"({"github.com":true})";
  EXPECT_FALSE(compile_list(not_array, "x").has_value());
}

TEST(FlagPayload, ContextIsEscapedJson) {
  EXPECT_EQ(context_json("example.com", "alice"),
            R"({"kind":"user","key":"example.com","username":"alice"})");
  EXPECT_EQ(context_json("bot", ""), R"({"kind":"user","key":"bot"})");
  EXPECT_EQ(context_json("a\"b", "c\\d"), R"({"kind":"user","key":"a\"b","username":"c\\d"})");
}

TEST(FlagPayload, Base64UrlWithoutPadding) {
  EXPECT_EQ(base64url(""), "");
  EXPECT_EQ(base64url("f"), "Zg");
  EXPECT_EQ(base64url("fo"), "Zm8");
  EXPECT_EQ(base64url("foo"), "Zm9v");
  EXPECT_EQ(base64url("\xfb\xff"), "-_8");
  EXPECT_EQ(base64url(R"({"kind":"user","key":"bot"})"), "eyJraW5kIjoidXNlciIsImtleSI6ImJvdCJ9");
}

}  // namespace
}  // namespace sandgate::launchdarkly
