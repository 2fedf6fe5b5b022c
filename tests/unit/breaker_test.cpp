#include "policy/breaker.h"

#include <gtest/gtest.h>

namespace toolbridge::policy {
namespace {

using namespace std::chrono_literals;

struct BreakerTest : ::testing::Test {
  base::ManualClock clock;
  int opened = 0;
  Breaker make(std::size_t threshold = 3, std::chrono::milliseconds cooldown = 1000ms) {
    Breaker b("srv", BreakerOptions{threshold, cooldown, 30'000ms}, clock);
    b.on_open = [this] { ++opened; };
    return b;
  }
};

TEST_F(BreakerTest, OpensAfterThresholdTimeoutsInARow) {
  Breaker b = make(3);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(b.admit(), "");
    b.record(true, "timed out");
  }
  EXPECT_EQ(b.state(), Breaker::State::kClosed);
  EXPECT_EQ(b.admit(), "");
  b.record(true, "srv__slow timed out after 0.3 s");
  EXPECT_EQ(b.state(), Breaker::State::kOpen);
  EXPECT_EQ(opened, 1);
  const std::string refused = b.admit();
  EXPECT_NE(refused.find(
                "server 'srv' is failing (3 calls in a row timed out; last: srv__slow timed out"),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("refused for 1.0 s more"), std::string::npos) << refused;
}

TEST_F(BreakerTest, ASuccessInBetweenResetsTheCount) {
  Breaker b = make(2);
  b.record(true, "t");
  b.record(false, "");
  b.record(true, "t");
  EXPECT_EQ(b.state(), Breaker::State::kClosed);
}

TEST_F(BreakerTest, HalfOpenAfterCooldownLetsOneProbeThrough) {
  Breaker b = make(1, 1000ms);
  b.record(true, "t");
  clock.advance(999ms);
  EXPECT_NE(b.admit(), "");
  clock.advance(1ms);
  EXPECT_EQ(b.admit(), "") << "the first call after the cooldown is the probe";
  EXPECT_EQ(b.state(), Breaker::State::kHalfOpen);
  EXPECT_NE(b.admit(), "") << "a second call while the probe runs is refused";
  b.record(false, "");
  EXPECT_EQ(b.state(), Breaker::State::kClosed);
  EXPECT_EQ(b.admit(), "");
}

TEST_F(BreakerTest, AFailedProbeReopensWithDoubledCooldownCappedAtEightTimes) {
  Breaker b = make(1, 1000ms);
  b.record(true, "t");
  std::chrono::milliseconds expected = 1000ms;
  for (int round = 0; round < 6; ++round) {
    clock.advance(expected);
    ASSERT_EQ(b.admit(), "");  // probe
    b.record(true, "t");
    expected = std::min(expected * 2, 8000ms);
    EXPECT_EQ(b.cooldown(), expected) << "round " << round;
    clock.advance(expected - 1ms);
    EXPECT_NE(b.admit(), "");
  }
  EXPECT_EQ(b.cooldown(), 8000ms);
  EXPECT_EQ(opened, 7);
}

TEST_F(BreakerTest, ALostProbeStopsCountingAfterProbeLostAfter) {
  Breaker b("srv", BreakerOptions{1, 1000ms, 5000ms}, clock);
  b.record(true, "t");
  clock.advance(1000ms);
  ASSERT_EQ(b.admit(), "");  // the probe, which never reports
  clock.advance(4999ms);
  EXPECT_NE(b.admit(), "");
  clock.advance(2ms);
  EXPECT_EQ(b.admit(), "") << "a new probe once the lost one stops counting";
}

TEST_F(BreakerTest, ThresholdZeroDisablesIt) {
  Breaker b = make(0);
  for (int i = 0; i < 100; ++i) b.record(true, "t");
  EXPECT_FALSE(b.enabled());
  EXPECT_EQ(b.admit(), "");
  EXPECT_EQ(b.state(), Breaker::State::kClosed);
}

}  // namespace
}  // namespace toolbridge::policy
