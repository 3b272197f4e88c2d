// Inspection's origin sessions: kept one per host:port, replaced by a newer one, the oldest
// dropped past the bound (the resumption itself is seen end to end in tests/e2e/inspection_test).
#include "proxy/inspect/inspection.hpp"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <string>

namespace sandgate::inspect {
namespace {

TEST(InspectionOriginSessions, OnePerOriginAndNoMoreThanTheBound) {
  auto inspection = Inspection::create(std::string(::testing::TempDir()) + "/unused-ca", {});
  ASSERT_TRUE(inspection) << inspection.error();
  Inspection& kept = **inspection;
  kept.remember_origin_session("a.test:443", SSL_SESSION_new());
  kept.remember_origin_session("a.test:443", SSL_SESSION_new());  // replaces the first
  EXPECT_EQ(kept.origin_sessions(), 1u);
  for (std::size_t i = 0; i < Inspection::kOriginSessions + 100; ++i) {
    kept.remember_origin_session("host" + std::to_string(i) + ".test:443", SSL_SESSION_new());
  }
  EXPECT_EQ(kept.origin_sessions(), Inspection::kOriginSessions);
  // (Every session dropped or kept is freed: the sanitizer tree's leak check holds it.)
}

}  // namespace
}  // namespace sandgate::inspect
