#include "policy/admission_adaptive.h"

#include <gtest/gtest.h>

namespace toolbridge::policy {
namespace {

using namespace std::chrono_literals;

struct AdaptiveTest : ::testing::Test {
  base::ManualClock clock;
  config::AdaptiveLimit options{1, 100, 1'000ms, 60'000ms};

  // One window of calls of `latency` each, then the window is closed by the next sample.
  static void window(AdaptiveLimit& a, base::ManualClock& clock,
                     std::chrono::milliseconds latency) {
    for (int i = 0; i < 10; ++i) {
      clock.advance(100ms);
      a.sample(latency, clock.now());
    }
  }
};

TEST_F(AdaptiveTest, TheLimitGrowsWhileLatencyStaysAtItsMinimum) {
  AdaptiveLimit a(options, clock.now());
  const std::size_t start = a.limit();
  for (int i = 0; i < 20; ++i) window(a, clock, 50ms);
  EXPECT_GT(a.limit(), start);
  EXPECT_EQ(a.limit(), 100u);  // up to max_limit, no further
  EXPECT_NEAR(a.min_latency(), 0.050, 1e-9);
}

TEST_F(AdaptiveTest, TheLimitFallsWhenLatencyRisesAndRecoversWhenItFalls) {
  options.probe_interval = 3'600'000ms;  // no probe in the middle of this test
  AdaptiveLimit a(options, clock.now());
  for (int i = 0; i < 20; ++i) window(a, clock, 50ms);
  const std::size_t high = a.limit();
  for (int i = 0; i < 10; ++i) window(a, clock, 400ms);
  const std::size_t low = a.limit();
  EXPECT_LT(low, high / 4);
  EXPECT_GE(low, options.min_limit);
  for (int i = 0; i < 30; ++i) window(a, clock, 50ms);
  EXPECT_EQ(a.limit(), high);
}

TEST_F(AdaptiveTest, ItNeverLeavesMinAndMaxLimit) {
  options.min_limit = 3;
  options.max_limit = 12;
  AdaptiveLimit a(options, clock.now());
  for (int i = 0; i < 20; ++i) window(a, clock, 10ms);
  EXPECT_EQ(a.limit(), 12u);
  for (int i = 0; i < 20; ++i) window(a, clock, 5'000ms);
  EXPECT_EQ(a.limit(), 3u);
}

TEST_F(AdaptiveTest, TheMinimumIsProbedAgainSoASlowerServerIsNotHeldToAnOldOne) {
  options.probe_interval = 10'000ms;
  AdaptiveLimit a(options, clock.now());
  for (int i = 0; i < 5; ++i) window(a, clock, 50ms);
  EXPECT_NEAR(a.min_latency(), 0.050, 1e-9);
  // The server is now slower for good (200 ms even unloaded): the probe pins the limit to
  // min_limit, measures again, and the limit can grow at the new minimum.
  bool probed = false;
  for (int i = 0; i < 20; ++i) {
    window(a, clock, 200ms);
    if (a.probing()) {
      probed = true;
      EXPECT_EQ(a.limit(), options.min_limit);
    }
  }
  EXPECT_TRUE(probed);
  EXPECT_NEAR(a.min_latency(), 0.200, 1e-9);
  std::size_t highest = 0;
  for (int i = 0; i < 30; ++i) {
    window(a, clock, 200ms);
    highest = std::max(highest, a.limit());
  }
  EXPECT_EQ(highest, 100u);
}

}  // namespace
}  // namespace toolbridge::policy
