#include "upstream/noise_log.h"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using toolbridge::base::ManualClock;
using toolbridge::upstream::NoiseLog;

TEST(NoiseLog, LogsTheFirstFewThenSumsUpTheRestOncePerInterval) {
  ManualClock clock;
  NoiseLog log(clock, 3, 10s);
  int logged = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto v = log.record();
    logged += v.log ? 1 : 0;
    EXPECT_EQ(v.suppressed, 0u);
  }
  EXPECT_EQ(logged, 3);
  EXPECT_EQ(log.total(), 1000u);
  clock.advance(10s);
  const auto next = log.record();
  EXPECT_TRUE(next.log);
  EXPECT_EQ(next.suppressed, 997u);
  EXPECT_EQ(next.interval, 10s);
  EXPECT_EQ(log.record().suppressed, 0u);  // reported once
}

TEST(NoiseLog, QuietIntervalsReportNothing) {
  ManualClock clock;
  NoiseLog log(clock, 2, 1s);
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(log.record().log);
    clock.advance(2s);
  }
  EXPECT_EQ(log.total(), 5u);
}
