// The response head checks both fronts share (proxy/session/exchange/pipeline/
// response_stages.hpp): a response to a request that carried a masked secret is refused when the
// gate could not search it for the secret's echo, and only then.
#include "proxy/session/exchange/pipeline/response_stages.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sandgate::session::exchange {
namespace {

struct Case {
  const char* name;
  bool carried_secret;
  unsigned status;
  const char* content_type;
  const char* coding;
  bool has_body;
  const char* refused;  // the refusal's sentence; nullptr: it goes on
};

const Case kCases[] = {
    {"no secret, partial", false, 206, "text/plain", "", true, nullptr},
    {"no secret, compressed", false, 200, "text/plain", "gzip", true, nullptr},
    {"secret, whole and plain", true, 200, "application/json", "", true, nullptr},
    {"secret, partial", true, 206, "text/plain", "", true,
     "origin.test:443 sent a partial response (206) to a request that carried a masked secret "
     "(the gate asked for the whole resource): a secret's echo in pieces cannot be cleaned."},
    {"secret, byteranges", true, 200, "multipart/byteranges; boundary=x", "", true,
     "origin.test:443 sent parts of a resource (multipart/byteranges) to a request that carried "
     "a masked secret (the gate asked for the whole resource): a secret's echo in pieces cannot "
     "be cleaned."},
    {"secret, compressed", true, 200, "text/plain", "br", true,
     "origin.test:443 sent a compressed response (br) to a request that carried a masked secret, "
     "though asked for none: the gate cannot search it for the secret's real value."},
    // Nothing to search: a coding named on an empty body hides nothing.
    {"secret, compressed without a body", true, 200, "text/plain", "gzip", false, nullptr},
    // Partial first: its sentence is the one a client reads.
    {"secret, partial and compressed", true, 206, "text/plain", "gzip", true,
     "origin.test:443 sent a partial response (206) to a request that carried a masked secret "
     "(the gate asked for the whole resource): a secret's echo in pieces cannot be cleaned."},
};

TEST(ResponseStagesTest, AResponseTheGateCannotSearchIsRefusedOnlyWhenARequestCarriedASecret) {
  for (const Case& c : kCases) {
    ExchangeStages stages;
    stages.carried_secret = c.carried_secret;
    const auto refused = refuse_unsearchable(stages, c.status, c.content_type, c.coding, c.has_body,
                                             "origin.test:443");
    if (c.refused == nullptr) {
      EXPECT_FALSE(refused.has_value()) << c.name << ": " << refused->sentence;
      continue;
    }
    ASSERT_TRUE(refused.has_value()) << c.name;
    EXPECT_EQ(refused->reason, rules::Reason::bad_response) << c.name;
    EXPECT_EQ(refused->sentence, c.refused) << c.name;
  }
}

}  // namespace
}  // namespace sandgate::session::exchange
