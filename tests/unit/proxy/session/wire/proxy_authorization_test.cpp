// The strict parser of Proxy-Authorization (SANDGATE_TOKEN): canonical padded Base64 only, Basic
// with a user and the token as password, one field per request, a constant-time compare.
#include <gtest/gtest.h>

#include <boost/beast/http/fields.hpp>
#include <string>
#include <vector>

#include "connect-proxy/connect_request.hpp"
#include "proxy/session/wire/proxy_token.hpp"
#include "rules/base64.hpp"

namespace sandgate::testing {
namespace {

namespace http = boost::beast::http;
using session::AuthCheck;

const std::string kToken = "tok-5f1e2d3c4b5a69788796a5b4";

std::string basic(std::string_view credentials) {
  return "Basic " + connect_proxy::encode_base64(credentials);
}

TEST(DecodeBase64Strict, CanonicalPaddedBase64Only) {
  EXPECT_EQ(rules::base64_decoded("dTp0"), "u:t");
  EXPECT_EQ(rules::base64_decoded("dTp0bw=="), "u:to");
  EXPECT_EQ(rules::base64_decoded("dTp0b2s="), "u:tok");
  EXPECT_EQ(rules::base64_decoded("Pz8/Pz8+"), "?\?\?\?\?>");
  for (const char* bad : {"", "dTp", "dTp0b", "dTp0bw", "dTp0bw=", "dTp0b===", "dT=0",
                          "dTp0bx==",  // unused bits set: not the canonical encoding
                          "dTp0b2t=",  // likewise
                          "dTp0 bw==", "dTp0bw==\n", "dT-_", "====", "d\xc3\xa9p0"}) {
    EXPECT_EQ(rules::base64_decoded(bad), std::nullopt) << bad;
  }
}

struct AuthCase {
  const char* name;
  std::vector<std::string> values;  // Proxy-Authorization fields, in order
  AuthCheck want;
};

class ProxyAuthorizationTest : public ::testing::TestWithParam<AuthCase> {};

TEST_P(ProxyAuthorizationTest, Checks) {
  const AuthCase& c = GetParam();
  http::fields fields;
  fields.insert(http::field::host, "example.com:443");
  for (const auto& value : c.values) {
    fields.insert(http::field::proxy_authorization, value);
  }
  const auto result = session::check_proxy_authorization(fields, kToken);
  EXPECT_EQ(static_cast<int>(result.check), static_cast<int>(c.want));
  EXPECT_EQ(result.check == AuthCheck::malformed, !result.problem.empty());
  // No token configured: everything passes.
  EXPECT_EQ(static_cast<int>(session::check_proxy_authorization(fields, "").check),
            static_cast<int>(AuthCheck::ok));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ProxyAuthorizationTest,
    ::testing::Values(
        AuthCase{"right", {basic("agent:" + kToken)}, AuthCheck::ok},
        AuthCase{"any_user", {basic("someone-else:" + kToken)}, AuthCheck::ok},
        AuthCase{"empty_user", {basic(":" + kToken)}, AuthCheck::ok},
        AuthCase{"scheme_any_case",
                 {"bAsIc  " + connect_proxy::encode_base64("u:" + kToken)},
                 AuthCheck::ok},
        AuthCase{"colon_in_token_part", {basic("u:" + kToken + ":")}, AuthCheck::wrong},
        AuthCase{"missing", {}, AuthCheck::missing},
        AuthCase{"wrong", {basic("u:tok-5f1e2d3c4b5a69788796a5b5")}, AuthCheck::wrong},
        AuthCase{"prefix", {basic("u:" + kToken.substr(0, 10))}, AuthCheck::wrong},
        AuthCase{"longer", {basic("u:" + kToken + "x")}, AuthCheck::wrong},
        AuthCase{"empty_password", {basic("u:")}, AuthCheck::wrong},
        AuthCase{"token_as_user", {basic(kToken + ":")}, AuthCheck::wrong},
        AuthCase{"no_colon", {basic(kToken)}, AuthCheck::malformed},
        AuthCase{"bearer", {"Bearer " + kToken}, AuthCheck::malformed},
        AuthCase{"bare_scheme", {"Basic"}, AuthCheck::malformed},
        AuthCase{"scheme_only_space", {"Basic "}, AuthCheck::malformed},
        AuthCase{"not_base64", {"Basic !!!!"}, AuthCheck::malformed},
        AuthCase{"unpadded", {"Basic dTp0bw"}, AuthCheck::malformed},
        AuthCase{"trailing_junk", {basic("u:" + kToken) + " x"}, AuthCheck::malformed},
        AuthCase{"raw_token", {"Basic u:" + kToken}, AuthCheck::malformed},
        AuthCase{"twice_same", {basic("u:" + kToken), basic("u:" + kToken)}, AuthCheck::malformed},
        AuthCase{
            "twice_one_wrong", {basic("u:wrong"), basic("u:" + kToken)}, AuthCheck::malformed}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace sandgate::testing
