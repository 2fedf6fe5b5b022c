#include "base/jitter.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace toolbridge::base {
namespace {

using namespace std::chrono_literals;

class FixedRandom final : public RandomSource {
 public:
  explicit FixedRandom(double value) : value_(value) {}
  double uniform() override { return value_; }

 private:
  double value_;
};

TEST(SeededRandom, TheSameSeedGivesTheSameSequence) {
  SeededRandom a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const double x = a.uniform();
    EXPECT_EQ(x, b.uniform());
    differs = differs || x != c.uniform();
  }
  EXPECT_TRUE(differs);
}

TEST(SeededRandom, StaysInTheUnitInterval) {
  SeededRandom r(7);
  for (int i = 0; i < 10'000; ++i) {
    const double x = r.uniform();
    ASSERT_GE(x, 0.0);
    ASSERT_LT(x, 1.0);
  }
}

TEST(Jittered, TheExtremesOfTheSourceGiveTheEndsOfTheSpread) {
  FixedRandom low(0.0), middle(0.5), high(1.0);
  EXPECT_EQ(jittered(1000ms, 0.2, low), 800ms);
  EXPECT_EQ(jittered(1000ms, 0.2, middle), 1000ms);
  EXPECT_EQ(jittered(1000ms, 0.2, high), 1200ms);
  EXPECT_EQ(jittered(1000ms, 0.0, high), 1000ms);
}

TEST(Jittered, ASeededSourceStaysWithinTheSpreadAndUsesMostOfIt) {
  SeededRandom r(1);
  auto lo = 10'000ms, hi = 0ms;
  for (int i = 0; i < 2'000; ++i) {
    const auto d = jittered(1000ms, 0.2, r);
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  EXPECT_GE(lo, 800ms);
  EXPECT_LE(hi, 1200ms);
  EXPECT_LT(lo, 820ms);
  EXPECT_GT(hi, 1180ms);
}

TEST(ProcessRandom, IsUsableAndInRange) {
  const double x = process_random().uniform();
  EXPECT_GE(x, 0.0);
  EXPECT_LT(x, 1.0);
}

TEST(ExponentialDelay, DoublesFromInitialUpToMax) {
  using std::chrono::milliseconds;
  const milliseconds initial{100}, max{1000};
  EXPECT_EQ(exponential_delay(initial, max, 0), milliseconds(0));
  EXPECT_EQ(exponential_delay(initial, max, -3), milliseconds(0));
  EXPECT_EQ(exponential_delay(initial, max, 1), milliseconds(100));
  EXPECT_EQ(exponential_delay(initial, max, 2), milliseconds(200));
  EXPECT_EQ(exponential_delay(initial, max, 4), milliseconds(800));
  EXPECT_EQ(exponential_delay(initial, max, 5), milliseconds(1000));
  EXPECT_EQ(exponential_delay(initial, max, 1'000'000), milliseconds(1000));  // no overflow
}

TEST(ExponentialDelay, AnInitialOverMaxIsCut) {
  using std::chrono::milliseconds;
  EXPECT_EQ(exponential_delay(milliseconds(5000), milliseconds(1000), 1), milliseconds(1000));
}

}  // namespace
}  // namespace toolbridge::base
