// Trace context: traceparent parsing, the trajectory's trace id rule, random ids, sampling.
#include "otel/ids.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace toolbridge::otel {
namespace {

TEST(OtelIds, ATraceparentGivesTraceParentAndFlags) {
  const auto tp = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(tp);
  EXPECT_EQ(hex(tp->trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(hex(tp->parent_id), "00f067aa0ba902b7");
  EXPECT_EQ(tp->flags, 1);
}

TEST(OtelIds, MalformedTraceparentsAreIgnored) {
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
           "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // uppercase
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // zero parent id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
       }) {
    EXPECT_FALSE(parse_traceparent(bad)) << bad;
  }
}

TEST(OtelIds, ATrajectoryHasOneTraceIdEverywhere) {
  // The first 16 bytes of SHA-256("rollout-7"): any gateway, any process, computes the same.
  EXPECT_EQ(hex(trajectory_trace_id("rollout-7")), hex(trajectory_trace_id("rollout-7")));
  EXPECT_NE(hex(trajectory_trace_id("rollout-7")), hex(trajectory_trace_id("rollout-8")));
  // SHA-256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
  EXPECT_EQ(hex(trajectory_trace_id("abc")), "ba7816bf8f01cfea414140de5dae2223");
}

TEST(OtelIds, ATrajectorysIdIsTheSameWhenItsCacheSlotWasTaken) {
  // Far more trajectories than the per-thread table holds (1,024): each one's id is still the
  // digest of its name, first seen, evicted or cached.
  const std::string first = hex(trajectory_trace_id("abc"));
  std::map<std::string, std::string> ids;
  for (int i = 0; i < 5000; ++i) {
    const std::string name = "rollout-" + std::to_string(i);
    ids[name] = hex(trajectory_trace_id(name));
  }
  for (int i = 4999; i >= 0; i -= 7) {
    const std::string name = "rollout-" + std::to_string(i);
    EXPECT_EQ(hex(trajectory_trace_id(name)), ids[name]) << name;
  }
  EXPECT_EQ(hex(trajectory_trace_id("abc")), first);
  EXPECT_EQ(first, "ba7816bf8f01cfea414140de5dae2223");
  std::set<std::string> distinct;
  for (const auto& [name, id] : ids) distinct.insert(id);
  EXPECT_EQ(distinct.size(), ids.size());
}

TEST(OtelIds, RandomIdsDifferAndAreNeverZero) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const SpanId s = random_span_id();
    EXPECT_FALSE(is_zero(s));
    seen.insert(hex(s));
    EXPECT_FALSE(is_zero(random_trace_id()));
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(OtelIds, SamplingKeepsTheRatioAndDecidesByTraceId) {
  EXPECT_TRUE(sampled_at(random_trace_id(), 1.0));
  EXPECT_FALSE(sampled_at(random_trace_id(), 0.0));
  int kept = 0;
  for (int i = 0; i < 10'000; ++i) {
    const TraceId id = random_trace_id();
    const bool once = sampled_at(id, 0.25);
    EXPECT_EQ(once, sampled_at(id, 0.25));  // the same trace, the same answer
    kept += once;
  }
  EXPECT_GT(kept, 2200);
  EXPECT_LT(kept, 2800);
}

}  // namespace
}  // namespace toolbridge::otel
