// sim::Time: exact integer picoseconds, rounding from seconds, arithmetic and order.
#include "sim/core/time.h"

#include <gtest/gtest.h>

namespace {

TEST(TimeTest, UnitsConvertToPicoseconds) {
  EXPECT_EQ(sim::Time::from_ns(3).ps(), 3'000);
  EXPECT_EQ(sim::Time::from_us(2).ps(), 2'000'000);
  EXPECT_EQ(sim::Time::from_seconds(1.5).ps(), 1'500'000'000'000);
}

TEST(TimeTest, SecondsRoundToNearestPicosecond) {
  EXPECT_EQ(sim::Time::from_seconds(1.4e-12).ps(), 1);
  EXPECT_EQ(sim::Time::from_seconds(1.6e-12).ps(), 2);
  EXPECT_EQ(sim::Time::from_seconds(0.0).ps(), 0);
}

TEST(TimeTest, NegativeAndNaNClampToZeroAndHugeToMax) {
  EXPECT_EQ(sim::Time::from_seconds(-1.0), sim::Time::zero());
  EXPECT_EQ(sim::Time::from_seconds(std::nan("")), sim::Time::zero());
  EXPECT_EQ(sim::Time::from_seconds(1e30), sim::Time::max());
}

TEST(TimeTest, ArithmeticAndOrderAreExact) {
  const sim::Time a = sim::Time::from_ps(7);
  const sim::Time b = sim::Time::from_ps(5);
  EXPECT_EQ((a + b).ps(), 12);
  EXPECT_EQ((a - b).ps(), 2);
  EXPECT_LT(b, a);
  EXPECT_EQ(sim::max(a, b), a);
  EXPECT_EQ(sim::min(a, b), b);
  // 0.1 + 0.2 == 0.3 holds in picoseconds although it does not in doubles.
  EXPECT_EQ(sim::Time::from_seconds(0.1) + sim::Time::from_seconds(0.2), sim::Time::from_seconds(0.3));
}

}  // namespace
