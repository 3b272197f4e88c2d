// SigV4 (sigv4.hpp) against AWS's published example, and the canonical forms it tries.
#include "proxy/secrets/sigv4.hpp"

#include <gtest/gtest.h>

namespace sandgate::secrets {
namespace {

constexpr const char* kExampleKey = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

// "Create a signature" in AWS's SigV4 documentation: IAM ListUsers, 2015-08-30.
SigV4Request example_request() {
  SigV4Request request;
  request.method = "GET";
  request.target = "/?Action=ListUsers&Version=2010-05-08";
  request.fields = {{"Host", "iam.amazonaws.com"},
                    {"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"},
                    {"X-Amz-Date", "20150830T123600Z"}};
  request.payload_hash = sha256_hex("");
  return request;
}

TEST(SigV4, MatchesAwsPublishedExample) {
  auto authorization = parse_sigv4_authorization(
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
      "SignedHeaders=content-type;host;x-amz-date, "
      "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
  ASSERT_TRUE(authorization);
  EXPECT_EQ(authorization->access_key_id, "AKIDEXAMPLE");
  EXPECT_EQ(authorization->service, "iam");
  const auto signature =
      sigv4_signature(example_request(), *authorization, kExampleKey, CanonicalForm{});
  ASSERT_TRUE(signature);
  EXPECT_EQ(*signature, "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
  EXPECT_TRUE(sigv4_signed_with(example_request(), *authorization, kExampleKey));
  EXPECT_FALSE(sigv4_signed_with(example_request(), *authorization, "another key"));
  // Written back as parsed.
  EXPECT_EQ(render_sigv4_authorization(*authorization),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
            "SignedHeaders=content-type;host;x-amz-date, "
            "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
}

TEST(SigV4, FindsTheFormTheClientUsedForPathsAndQueries) {
  SigV4Authorization authorization{"AKID", "20150830", "us-east-1", "s3", {"host", "x-amz-date"},
                                   ""};
  SigV4Request request = example_request();
  request.target = "/bucket/a%20b/../c?b=2&a=%7E";
  for (const PathForm path : {PathForm::as_sent, PathForm::encoded_again}) {
    for (const QueryForm query : {QueryForm::as_sent, QueryForm::encoded_again}) {
      authorization.signature = *sigv4_signature(request, authorization, "key", {path, query});
      const auto found = sigv4_signed_with(request, authorization, "key");
      ASSERT_TRUE(found);
      // The form found gives the same signature (two forms may agree on a given request).
      EXPECT_EQ(*sigv4_signature(request, authorization, "key", *found), authorization.signature);
    }
  }
  // A signed header the request lacks: no signature can be made.
  authorization.signed_headers.push_back("x-amz-security-token");
  EXPECT_FALSE(sigv4_signature(request, authorization, "key", {}));
}

TEST(SigV4, ReadsOnlyWellFormedAuthorizations) {
  for (const char* bad : {
           "AWS4-HMAC-SHA256",
           "AWS4-HMAC-SHA256X Credential=a/20150830/r/s/aws4_request, SignedHeaders=host, "
           "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
           "AWS4-HMAC-SHA256 Credential=a/20150830/r/s/other, SignedHeaders=host, "
           "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
           "AWS4-HMAC-SHA256 Credential=a/2015/r/s/aws4_request, SignedHeaders=host, "
           "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
           "AWS4-HMAC-SHA256 Credential=a/20150830/r/s/aws4_request, SignedHeaders=host, "
           "Signature=zz",
           "AWS4-HMAC-SHA256 Credential=a/20150830/r/s/aws4_request, SignedHeaders=host;;x, "
           "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
           "AWS4-HMAC-SHA256 Credential=a/20150830/r/s/aws4_request, SignedHeaders=host, "
           "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7, Extra=1",
           "Bearer abc",
       }) {
    EXPECT_FALSE(parse_sigv4_authorization(bad)) << bad;
  }
}

}  // namespace
}  // namespace sandgate::secrets
