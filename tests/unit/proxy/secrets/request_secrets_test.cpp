// Sentinels in request heads (request_secrets.hpp): where they may be filled in, and filling.
#include "proxy/secrets/request_secrets.hpp"
#include "rules/base64.hpp"

#include <gtest/gtest.h>

namespace sandgate::secrets {
namespace {

namespace http = boost::beast::http;

class RequestSecrets : public ::testing::Test {
 protected:
  RequestSecrets()
      : secrets_(MaskedSecrets::with({
            {*parse_secret_spec("GITHUB_TOKEN=api.github.com,github.com"), kToken, kSentinel},
            {*parse_secret_spec("NPM_TOKEN=registry.npmjs.org"), kNpm, kNpmSentinel},
        })) {}

  static http::request_header<> head(const std::string& target,
                                     std::vector<std::pair<std::string, std::string>> fields) {
    http::request_header<> out;
    out.method(http::verb::get);
    out.target(target);
    for (const auto& [name, value] : fields) {
      out.insert(name, value);
    }
    return out;
  }
  std::optional<std::string> misplaced(const http::request_header<>& h,
                                       const std::string& host = "api.github.com",
                                       bool verified = true) {
    return misplaced_secret(*secrets_, h, host, verified);
  }

  static constexpr const char* kToken = "ghp_realrealrealrealrealrealrealreal1234";
  static constexpr const char* kSentinel = "ghp_SENTINELsentinelSENTINELsentinel5678";
  static constexpr const char* kNpm = "npm_realrealrealrealrealrealrealrealREAL";
  static constexpr const char* kNpmSentinel = "npm_MASKmaskMASKmaskMASKmaskMASKmaskMASK";
  std::shared_ptr<const MaskedSecrets> secrets_;
};

TEST_F(RequestSecrets, FillsBearerApiKeyFieldsAndBasicCredentials) {
  auto h = head("/user", {{"Authorization", std::string("Bearer ") + kSentinel},
                          {"X-Api-Key", kSentinel},
                          {"Private-Token", std::string("x") + kSentinel},
                          {"Accept", "*/*"}});
  EXPECT_FALSE(misplaced(h));
  EXPECT_TRUE(fill_secrets(*secrets_, h));
  EXPECT_EQ(h[http::field::authorization], std::string("Bearer ") + kToken);
  EXPECT_EQ(h["X-Api-Key"], kToken);
  EXPECT_EQ(h["Private-Token"], std::string("x") + kToken);
  EXPECT_EQ(h[http::field::accept], "*/*");
  // The order of the fields is kept.
  EXPECT_EQ(std::string(h.begin()->name_string()), "Authorization");

  auto basic =
      head("/info/refs", {{"Authorization", "Basic " + rules::base64_encoded(std::string("x-access-"
                                                                                         "token:") +
                                                                             kSentinel)}});
  EXPECT_FALSE(misplaced(basic, "github.com"));
  EXPECT_TRUE(fill_secrets(*secrets_, basic));
  EXPECT_EQ(basic[http::field::authorization],
            "Basic " + rules::base64_encoded(std::string("x-access-token:") + kToken));

  auto none = head("/", {{"Accept", "*/*"}});
  EXPECT_FALSE(misplaced(none));
  EXPECT_FALSE(fill_secrets(*secrets_, none));
}

TEST_F(RequestSecrets, RefusesASentinelAnywhereElseNamingTheSecretNotItsValue) {
  const auto refused = [&](const std::optional<std::string>& why, const std::string& expected) {
    ASSERT_TRUE(why) << expected;
    EXPECT_NE(why->find(expected), std::string::npos) << *why;
    EXPECT_NE(why->find("GITHUB_TOKEN"), std::string::npos) << *why;
    EXPECT_EQ(why->find(kToken), std::string::npos) << *why;
    EXPECT_EQ(why->find(kSentinel), std::string::npos) << *why;
  };
  const std::string bearer = std::string("Bearer ") + kSentinel;
  // Another host, a subdomain the list does not name, plain HTTP, the URL (raw or escaped),
  // fields a server echoes or logs, a field's name.
  refused(misplaced(head("/", {{"Authorization", bearer}}), "evil.example"), "not bound");
  refused(misplaced(head("/", {{"Authorization", bearer}}), "gist.github.com"), "not bound");
  refused(misplaced(head("/", {{"Authorization", bearer}}), "api.github.com", false),
          "did not verify");
  refused(misplaced(head(std::string("/?token=") + kSentinel, {})), "target");
  std::string escaped = "/?t=";
  for (const char c : std::string(kSentinel)) {
    escaped += "%" + std::string(1, "0123456789ABCDEF"[c >> 4]) +
               std::string(1, "0123456789ABCDEF"[c & 15]);
  }
  refused(misplaced(head(escaped, {})), "target");
  refused(misplaced(head("/", {{"User-Agent", kSentinel}})), "User-Agent");
  refused(misplaced(head("/", {{"Host", kSentinel}})), "Host");
  refused(misplaced(head("/", {{"Cookie", std::string("s=") + kSentinel}})), "Cookie");
  refused(misplaced(head("/", {{std::string("X-") + kSentinel, "1"}})), "name");
  refused(misplaced(head("/", {{"Authorization",
                                "Basic " + rules::base64_encoded(std::string("u:") + kSentinel)}}),
                    "evil.example"),
          "not bound");
  // Two secrets in one request to a host only one of them is bound to.
  auto both = head("/", {{"Authorization", bearer}, {"X-Npm-Token", kNpmSentinel}});
  auto why = misplaced(both);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("NPM_TOKEN"), std::string::npos) << *why;
}

// The gate signs again only requests made now, with their date signed, and never one shaped
// like a presigned URL (hostile review F5): its signature must not be usable later or elsewhere.
TEST(SignAgain, OnlyRequestsMadeNowAndNeverPresignedShapes) {
  const auto signed_at = [](const std::string& target, const std::string& date,
                            const std::string& headers) {
    http::request_header<> h;
    h.method(http::verb::get);
    h.target(target);
    h.insert("Host", "s3.example.com");
    h.insert("X-Amz-Date", date);
    h.insert("Authorization",
             "AWS4-HMAC-SHA256 Credential=AKID/20261128/us-east-1/s3/aws4_request, "
             "SignedHeaders=" +
                 headers +
                 ", Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
    return *signed_request(h);
  };
  std::tm noon{};
  ::strptime("20261128T120000Z", "%Y%m%dT%H%M%SZ", &noon);
  const auto now = std::chrono::system_clock::from_time_t(::timegm(&noon));
  EXPECT_FALSE(unsignable(signed_at("/b/k", "20261128T121000Z", "host;x-amz-date"), now));
  EXPECT_FALSE(unsignable(signed_at("/b/k", "20261128T115000Z", "host;x-amz-date"), now));
  const auto refused = [&](const SignedRequest& r, const std::string& expected) {
    const auto why = unsignable(r, now);
    ASSERT_TRUE(why) << expected;
    EXPECT_NE(why->find(expected), std::string::npos) << *why;
  };
  refused(signed_at("/b/k", "20261204T120000Z", "host;x-amz-date"), "15 minutes");
  refused(signed_at("/b/k", "20261128T114000Z", "host;x-amz-date"), "15 minutes");
  refused(signed_at("/b/k", "20261128T120000Z", "host"), "does not cover X-Amz-Date");
  refused(signed_at("/b/k", "2026-11-28", "host;x-amz-date"), "not a SigV4 time");
  refused(signed_at("/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=604800",
                    "20261128T120000Z", "host;x-amz-date"),
          "presigned-URL");
  refused(signed_at("/b/k?a=1&x%2Damz%2Dsignature=00", "20261128T120000Z", "host;x-amz-date"),
          "presigned-URL");
  // A parameter that only ends in such a name is no presigned URL's.
  EXPECT_FALSE(
      unsignable(signed_at("/b/k?my-x-amz-date=1", "20261128T120000Z", "host;x-amz-date"), now));
}

// A response's codings are read as a list, in any case, with parameters and spaces around its
// items: the first that is not the plain one is the compression.
TEST(CodingOtherThan, FindsTheFirstCodingInAListThatIsNotThePlainOne) {
  EXPECT_EQ(coding_other_than("identity", "identity"), "");
  EXPECT_EQ(coding_other_than(" IDENTITY ,\tidentity", "identity"), "");
  EXPECT_EQ(coding_other_than("", "identity"), "");
  EXPECT_EQ(coding_other_than(",,", "identity"), "");
  EXPECT_EQ(coding_other_than("gzip", "identity"), "gzip");
  EXPECT_EQ(coding_other_than("identity, br", "identity"), "br");
  EXPECT_EQ(coding_other_than("gzip;q=1, identity", "identity"), "gzip");
  EXPECT_EQ(coding_other_than("chunked", "chunked"), "");
  EXPECT_EQ(coding_other_than("gzip, chunked", "chunked"), "gzip");
  EXPECT_EQ(coding_other_than(std::string(100, 'x'), "identity"), std::string(32, 'x'));
}

}  // namespace
}  // namespace sandgate::secrets
