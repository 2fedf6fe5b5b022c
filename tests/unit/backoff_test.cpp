// Restart backoff driven by a ManualClock and a fixed random source: no sleeping.
#include "upstream/backoff.h"

#include <gtest/gtest.h>

namespace toolbridge::upstream {
namespace {

using namespace std::chrono_literals;

class FixedRandom final : public base::RandomSource {
 public:
  explicit FixedRandom(double value) : value(value) {}
  double uniform() override { return value; }
  double value;
};

TEST(Backoff, NominalDelayDoublesPerConsecutiveFailureUpToTheMax) {
  FixedRandom random(0.5);
  const Backoff b(500ms, 30s, random);
  EXPECT_EQ(b.nominal_delay(0), 0ms);
  EXPECT_EQ(b.nominal_delay(1), 500ms);
  EXPECT_EQ(b.nominal_delay(2), 1000ms);
  EXPECT_EQ(b.nominal_delay(3), 2000ms);
  EXPECT_EQ(b.nominal_delay(6), 16'000ms);
  EXPECT_EQ(b.nominal_delay(7), 30s);  // 32 s, capped
  EXPECT_EQ(b.nominal_delay(1000), 30s);
}

TEST(Backoff, AMaxBelowTheInitialDelayCapsTheFirstWaitToo) {
  FixedRandom random(0.5);
  const Backoff b(5s, 2s, random);
  EXPECT_EQ(b.nominal_delay(1), 2s);
}

TEST(Backoff, EachFailureWaitsTwiceAsLongFromItsOwnTime) {
  base::ManualClock clock;
  FixedRandom random(0.5);  // no jitter
  Backoff b(500ms, 4s, random);
  EXPECT_FALSE(b.waiting(clock.now()));
  const std::chrono::milliseconds expected[] = {500ms, 1s, 2s, 4s, 4s};
  for (int i = 0; i < 5; ++i) {
    b.failed(clock.now());
    EXPECT_EQ(b.consecutive_failures(), i + 1);
    EXPECT_EQ(b.retry_at() - clock.now(), expected[i]) << "failure " << i + 1;
    EXPECT_TRUE(b.waiting(clock.now()));
    clock.advance(expected[i] - 1ms);
    EXPECT_TRUE(b.waiting(clock.now()));
    clock.advance(1ms);
    EXPECT_FALSE(b.waiting(clock.now()));
  }
}

TEST(Backoff, JitterStaysWithinTwentyPercent) {
  base::ManualClock clock;
  FixedRandom random(0.0);
  Backoff b(1s, 60s, random);
  b.failed(clock.now());
  EXPECT_EQ(b.retry_at() - clock.now(), 800ms);
  random.value = 1.0;
  b.failed(clock.now());
  EXPECT_EQ(b.retry_at() - clock.now(), 2400ms);
}

TEST(Backoff, ASeededSourceKeepsEveryWaitInBounds) {
  base::ManualClock clock;
  base::SeededRandom random(99);
  Backoff b(100ms, 10s, random);
  for (int i = 1; i <= 30; ++i) {
    b.failed(clock.now());
    const auto nominal = b.nominal_delay(i);
    const auto wait = b.retry_at() - clock.now();
    EXPECT_GE(wait, nominal * 8 / 10) << "failure " << i;
    EXPECT_LE(wait, nominal * 12 / 10) << "failure " << i;
    clock.advance(wait);
  }
}

TEST(Backoff, AStableExitRestartsAtOnceAndCountsFromZero) {
  base::ManualClock clock;
  FixedRandom random(0.5);
  Backoff b(500ms, 30s, random);
  b.failed(clock.now());
  b.failed(clock.now());
  clock.advance(5s);
  b.stable_exit(clock.now());
  EXPECT_EQ(b.consecutive_failures(), 0);
  EXPECT_FALSE(b.waiting(clock.now()));
  b.failed(clock.now());
  EXPECT_EQ(b.retry_at() - clock.now(), 500ms);
}

}  // namespace
}  // namespace toolbridge::upstream
