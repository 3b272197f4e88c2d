// The gate-wide budget of buffered LaunchDarkly replies (proxy/launchdarkly/reply_budget.hpp):
// charges add up to the total and no further, a refused charge takes nothing and is counted,
// and a charge gives its bytes back when it goes (or is moved from).
#include "proxy/launchdarkly/reply_budget.hpp"

#include <gtest/gtest.h>

#include <utility>

namespace sandgate::launchdarkly {
namespace {

TEST(ReplyBudget, IsTwiceThePerReplyLimit) {
  EXPECT_EQ(ReplyBudget::for_payload_limit(32u << 20), 64u << 20);
  EXPECT_EQ(ReplyBudget::for_payload_limit(1u << 20), 2u << 20);
}

TEST(ReplyBudget, ChargesAddUpToTheTotalAndNoFurther) {
  ReplyBudget budget(100);
  ReplyBudget::Charge a(budget);
  ReplyBudget::Charge b(budget);
  EXPECT_TRUE(a.grow_to(60));
  EXPECT_TRUE(b.grow_to(40));
  EXPECT_EQ(budget.in_use(), 100u);
  ReplyBudget::Charge c(budget);
  EXPECT_FALSE(c.grow_to(1));  // one byte past the total
  EXPECT_EQ(c.bytes(), 0u);
  EXPECT_EQ(budget.in_use(), 100u);
  EXPECT_EQ(budget.refusals(), 1u);
  a.release();
  EXPECT_TRUE(c.grow_to(60));
  EXPECT_EQ(budget.peak(), 100u);
}

TEST(ReplyBudget, AChargeGrowsAsBytesArriveAndARefusedGrowthKeepsWhatItHad) {
  ReplyBudget budget(100);
  ReplyBudget::Charge chunked(budget);
  EXPECT_TRUE(chunked.grow_to(10));
  EXPECT_TRUE(chunked.grow_to(10));  // never charged twice
  EXPECT_TRUE(chunked.grow_to(5));   // nor lowered
  EXPECT_TRUE(chunked.grow_to(80));
  EXPECT_EQ(budget.in_use(), 80u);
  EXPECT_FALSE(chunked.grow_to(101));
  EXPECT_EQ(chunked.bytes(), 80u);
  EXPECT_EQ(budget.in_use(), 80u);
}

TEST(ReplyBudget, AChargeGivesItsBytesBackWhenItGoes) {
  ReplyBudget budget(100);
  {
    ReplyBudget::Charge a(budget);
    ASSERT_TRUE(a.grow_to(70));
    ReplyBudget::Charge moved = std::move(a);
    EXPECT_EQ(budget.in_use(), 70u);
    ReplyBudget::Charge other(budget);
    ASSERT_TRUE(other.grow_to(30));
    other = std::move(moved);  // other's 30 go back, moved's 70 stay charged once
    EXPECT_EQ(budget.in_use(), 70u);
  }
  EXPECT_EQ(budget.in_use(), 0u);
  ReplyBudget::Charge unbound;  // no budget: charges nothing, refuses nothing
  EXPECT_TRUE(unbound.grow_to(1u << 30));
}

}  // namespace
}  // namespace sandgate::launchdarkly
