#include "telemetry/call_log.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace toolbridge::telemetry {
namespace {

namespace bj = boost::json;
using Clock = std::chrono::steady_clock;  // CallLog takes its time points
using namespace std::chrono_literals;

CallRecord record(std::uint64_t seq, const std::string& trajectory, std::string_view outcome,
                  double total) {
  CallRecord r;
  r.seq = seq;
  r.trajectory = trajectory;
  r.server = "fixture";
  r.tool = "fixture__echo";
  r.outcome = outcome;
  r.total_s = total;
  r.queue_s = total / 4;
  r.execution_s = total - r.queue_s;
  return r;
}

TEST(CallLog, ATrajectoryListsItsCallsInOrderWithASummary) {
  CallLog log;
  const auto t0 = Clock::now();
  for (int i = 0; i < 3; ++i) {
    const auto seq = log.begin("t1", "fixture", "fixture__echo", t0);
    log.end(seq, record(seq.seq, "t1", i == 1 ? "timeout" : "ok", 0.1 * (i + 1)), t0 + 1s);
  }
  const bj::object v = bj::parse(log.trajectory_json("t1", t0 + 2s)).as_object();
  const auto& calls = v.at("calls").as_array();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_LT(calls[0].at("seq").as_int64(), calls[2].at("seq").as_int64());
  const auto& summary = v.at("summary").as_object();
  EXPECT_EQ(summary.at("calls").as_int64(), 3);
  EXPECT_EQ(summary.at("errors").as_int64(), 1);
  EXPECT_NEAR(summary.at("tool_seconds").as_double(), 0.6, 1e-6);
  EXPECT_NEAR(summary.at("slowest_call").at("total_s").as_double(), 0.3, 1e-6);
  EXPECT_TRUE(log.trajectory_json("nobody", t0).empty());
}

TEST(CallLog, ATrajectoryCountsItsCallsByFaultClassAndSaysIfInfraFailedOne) {
  CallLog log(CallLog::Limits{.calls_kept = 2});
  const auto t0 = Clock::now();
  const auto end = [&](const std::string& t, std::string_view outcome, std::string_view fault) {
    const auto h = log.begin(t, "fixture", "fixture__echo", t0);
    CallRecord r = record(h.seq, t, outcome, 0.1);
    r.fault = fault;
    log.end(h, std::move(r), t0 + 1s);
  };
  // The infra failure is first: it left the ring of the last 2 calls, not the counts.
  end("masked", "timeout", "infra");
  end("masked", "ok", "ok");
  end("masked", "tool_error", "tool");
  end("kept", "tool_error", "tool");
  end("kept", "error", "agent");
  const auto summary = [&](const char* t) {
    return bj::parse(log.trajectory_json(t, t0 + 2s)).at("summary").as_object();
  };
  const bj::object masked = summary("masked");
  EXPECT_EQ(masked.at("faults"), bj::parse(R"({"ok":1,"agent":0,"tool":1,"infra":1})"));
  EXPECT_EQ(masked.at("infra_failed"), true);
  const bj::object kept = summary("kept");
  EXPECT_EQ(kept.at("faults"), bj::parse(R"({"ok":0,"agent":1,"tool":1,"infra":0})"));
  EXPECT_EQ(kept.at("infra_failed"), false);
  const bj::value calls = bj::parse(log.trajectory_json("kept", t0 + 2s)).at("calls");
  EXPECT_EQ(calls.at(0).at("fault"), "tool");
  EXPECT_EQ(calls.at(1).at("fault"), "agent");
  const bj::value rows = bj::parse(log.trajectories_json(t0 + 2s, 10)).at("trajectories");
  for (const auto& row : rows.as_array()) {
    EXPECT_EQ(row.at("infra_failed").as_bool(), row.at("trajectory").as_string() == "masked") << row;
  }
}

TEST(CallLog, ActiveCallsShowWhatATrajectoryIsWaitingOn) {
  CallLog log;
  const auto t0 = Clock::now();
  log.begin("stuck", "sandbox", "sandbox__run", t0);
  const auto done = log.begin("fine", "fixture", "fixture__echo", t0 + 1s);
  log.end(done, record(done.seq, "fine", "ok", 0.01), t0 + 2s);
  EXPECT_EQ(log.active_count(), 1u);
  const bj::object list = bj::parse(log.trajectories_json(t0 + 10s, 10)).as_object();
  const auto& rows = list.at("trajectories").as_array();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("trajectory").as_string(), "stuck");  // busy first
  EXPECT_EQ(rows[0].at("current").at("tool").as_string(), "sandbox__run");
  EXPECT_NEAR(rows[0].at("current").at("running_s").as_double(), 10.0, 1e-6);
  const bj::object live = bj::parse(log.live_json(t0 + 10s, 10s, 5)).as_object();
  EXPECT_EQ(live.at("slowest_active").as_array().at(0).at("trajectory").as_string(), "stuck");
  EXPECT_EQ(live.at("all").at("calls").as_int64(), 1);
}

TEST(CallLog, MemoryIsBoundedByTrajectoriesAndCallsKept) {
  CallLog log(CallLog::Limits{.trajectories = 8, .calls_kept = 4, .recent_calls = 16});
  const auto t0 = Clock::now();
  for (int i = 0; i < 20; ++i) {
    const std::string name = "t" + std::to_string(i);
    const auto seq = log.begin(name, "s", "s__x", t0 + std::chrono::milliseconds(i));
    log.end(seq, record(seq.seq, name, "ok", 0.001), t0 + std::chrono::milliseconds(i));
  }
  EXPECT_LE(log.trajectory_count(), 8u);
  EXPECT_TRUE(log.trajectory_json("t0", t0).empty());  // least recently active: forgotten
  EXPECT_FALSE(log.trajectory_json("t19", t0).empty());
  for (int i = 0; i < 10; ++i) {
    const auto seq = log.begin("long", "s", "s__x", t0 + 1s);
    log.end(seq, record(seq.seq, "long", "ok", 0.001), t0 + 1s);
  }
  const bj::object v = bj::parse(log.trajectory_json("long", t0 + 2s)).as_object();
  const bj::array& kept = v.at("calls").as_array();
  ASSERT_EQ(kept.size(), 4u);
  // The last four, oldest first, after the ring wrapped around twice.
  for (std::size_t i = 1; i < kept.size(); ++i)
    EXPECT_EQ(kept[i].at("seq").as_int64(), kept[i - 1].at("seq").as_int64() + 1);
  EXPECT_EQ(v.at("summary").at("calls").as_int64(), 10);
}

// Eviction takes the trajectory whose last call ended longest ago, never one with a call in
// flight however old, and does not step over those (4,096 callers, each with a call queued, made
// every new trajectory scan them all: 70 % of the gateway's CPU, issue 33).
TEST(CallLog, EvictionTakesTheLeastRecentlyIdleAndNeverOneInFlight) {
  CallLog log(CallLog::Limits{.trajectories = 3, .calls_kept = 4, .recent_calls = 16});
  const auto t0 = Clock::now();
  const auto in_flight = log.begin("a", "s", "s__x", t0);  // began first, still running
  for (const std::string name : {"b", "c"}) {
    const auto h = log.begin(name, "s", "s__x", t0 + 1s);
    log.end(h, record(h.seq, name, "ok", 0.001), t0 + 2s);
  }
  const auto d = log.begin("d", "s", "s__x", t0 + 3s);  // over the bound: b goes
  EXPECT_TRUE(log.trajectory_json("b", t0).empty());
  EXPECT_FALSE(log.trajectory_json("a", t0).empty());
  EXPECT_FALSE(log.trajectory_json("c", t0).empty());
  log.end(in_flight, record(in_flight.seq, "a", "ok", 3), t0 + 4s);  // a is now the newest idle
  log.end(d, record(d.seq, "d", "ok", 1), t0 + 4s);
  const auto e = log.begin("e", "s", "s__x", t0 + 5s);  // c ended longest ago
  EXPECT_TRUE(log.trajectory_json("c", t0).empty());
  EXPECT_FALSE(log.trajectory_json("a", t0).empty());
  EXPECT_FALSE(log.trajectory_json("d", t0).empty());
  // A trajectory with a call again leaves the idle list: with every one in flight, nothing goes.
  const auto a2 = log.begin("a", "s", "s__x", t0 + 6s);
  const auto d2 = log.begin("d", "s", "s__x", t0 + 6s);
  const auto f = log.begin("f", "s", "s__x", t0 + 7s);
  EXPECT_EQ(log.trajectory_count(), 4u);
  for (const auto& [h, name] : {std::pair{a2, "a"}, {d2, "d"}, {e, "e"}, {f, "f"}})
    log.end(h, record(h.seq, name, "ok", 0.001), t0 + 8s);
  const auto g = log.begin("g", "s", "s__x", t0 + 9s);  // the first idle one left then, a
  EXPECT_TRUE(log.trajectory_json("a", t0).empty());
  EXPECT_EQ(log.trajectory_count(), 4u);
  log.end(g, record(g.seq, "g", "ok", 0.001), t0 + 9s);
}

// A long rollout names far more trajectories than a count bound fits in memory: the bytes kept
// in all stop growing at max_bytes, the most recent trajectories stay, and forgetting one gives
// its bytes back (issue 33: 15 MB to 57 MB in a 3-minute soak).
TEST(CallLog, BytesKeptAreBoundedInAll) {
  constexpr std::size_t kMaxBytes = 256u << 10;
  CallLog log(CallLog::Limits{.trajectories = 100'000, .calls_kept = 256, .max_bytes = kMaxBytes});
  const auto t0 = Clock::now();
  std::size_t peak = 0;
  for (int i = 0; i < 2'000; ++i) {
    // A long trajectory name (its heap block counts) and a traceparent on every record.
    const std::string name = "rollout-step-0042-trajectory-" + std::to_string(i);
    for (int c = 0; c < 20; ++c) {
      const auto at = t0 + std::chrono::milliseconds(i * 20 + c);
      const auto seq = log.begin(name, "s", "s__x", at);
      CallRecord r = record(seq.seq, name, "ok", 0.001);
      r.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
      log.end(seq, std::move(r), at);
    }
    peak = std::max(peak, log.bytes());
  }
  EXPECT_LE(peak, kMaxBytes);
  EXPECT_GT(log.bytes(), kMaxBytes / 2);  // the bound is used, not a count far below it
  EXPECT_LT(log.trajectory_count(), 2'000u);
  EXPECT_FALSE(log.trajectory_json("rollout-step-0042-trajectory-1999", t0).empty());
  EXPECT_TRUE(log.trajectory_json("rollout-step-0042-trajectory-0", t0).empty());
  // One record is counted with its strings' heap blocks.
  CallRecord r = record(1, std::string(200, 't'), "ok", 0.001);
  EXPECT_GE(r.bytes(), sizeof(CallRecord) + 200);
}

TEST(CallLog, BytesOfARingThatWrapsStayThoseOfItsRecords) {
  CallLog log(CallLog::Limits{.trajectories = 8, .calls_kept = 4});
  const auto t0 = Clock::now();
  auto call = [&] {
    const auto seq = log.begin("t", "s", "s__x", t0);
    log.end(seq, record(seq.seq, "t", "ok", 0.001), t0);
  };
  for (int i = 0; i < 4; ++i) call();
  const std::size_t full = log.bytes();
  for (int i = 0; i < 100; ++i) call();  // the ring wraps: each record replaces one
  EXPECT_EQ(log.bytes(), full);
}

TEST(CallLog, ATrajectoryWithACallInFlightIsNeverForgotten) {
  CallLog log(CallLog::Limits{.trajectories = 2, .calls_kept = 4, .recent_calls = 16});
  const auto t0 = Clock::now();
  const auto held = log.begin("busy", "s", "s__x", t0);
  for (int i = 0; i < 10; ++i) {
    const std::string name = "t" + std::to_string(i);
    const auto seq = log.begin(name, "s", "s__x", t0 + std::chrono::seconds(i + 1));
    log.end(seq, record(seq.seq, name, "ok", 0.001), t0 + std::chrono::seconds(i + 1));
  }
  log.end(held, record(held.seq, "busy", "ok", 20), t0 + 20s);
  const bj::object v = bj::parse(log.trajectory_json("busy", t0 + 21s)).as_object();
  EXPECT_EQ(v.at("summary").at("calls").as_int64(), 1);
  EXPECT_EQ(log.active_count(), 0u);
}

TEST(CallLog, ATrajectoryCalledAgainIsKeptOverOlderIdleOnes) {
  CallLog log(CallLog::Limits{.trajectories = 3, .calls_kept = 4, .recent_calls = 16});
  const auto t0 = Clock::now();
  auto call = [&](const std::string& name, int at_s) {
    const auto seq = log.begin(name, "s", "s__x", t0 + std::chrono::seconds(at_s));
    log.end(seq, record(seq.seq, name, "ok", 0.001), t0 + std::chrono::seconds(at_s));
  };
  call("a", 1);
  call("b", 2);
  call("c", 3);
  call("a", 4);  // a is now the most recently active
  call("d", 5);  // evicts b, the least recently active
  EXPECT_FALSE(log.trajectory_json("a", t0).empty());
  EXPECT_TRUE(log.trajectory_json("b", t0).empty());
  EXPECT_FALSE(log.trajectory_json("c", t0).empty());
  EXPECT_FALSE(log.trajectory_json("d", t0).empty());
  call("e", 6);  // then c
  EXPECT_TRUE(log.trajectory_json("c", t0).empty());
  EXPECT_EQ(log.trajectory_count(), 3u);
}

TEST(CallLog, LiveFiguresCoverTheWindowOnly) {
  CallLog log;
  const auto t0 = Clock::now();
  for (int i = 0; i < 100; ++i) {
    const auto seq = log.begin("t", "s", "s__x", t0);
    // 50 old calls (slow), 50 within the last 10 s (fast).
    const auto at = i < 50 ? t0 : t0 + 30s;
    log.end(seq, record(seq.seq, "t", "ok", i < 50 ? 5.0 : 0.01 * (i - 49)), at);
  }
  const bj::object live = bj::parse(log.live_json(t0 + 31s, 10s, 5)).as_object();
  const auto& all = live.at("all").as_object();
  EXPECT_EQ(all.at("calls").as_int64(), 50);
  EXPECT_NEAR(all.at("calls_per_s").as_double(), 5.0, 1e-9);
  EXPECT_NEAR(all.at("p50_s").as_double(), 0.25, 1e-6);
  EXPECT_NEAR(all.at("p99_s").as_double(), 0.50, 1e-6);
  EXPECT_EQ(live.at("servers").at("fixture").at("calls").as_int64(), 50);
}

TEST(CallLog, ARecordIsOneJsonObjectWithEveryField) {
  CallRecord r = record(7, "traj \"quoted\"\n", "tool_error", 1.5);
  r.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  r.cached = true;
  r.repairs = 2;
  r.pid = 42;
  const bj::object v = bj::parse(r.json()).as_object();
  EXPECT_EQ(v.at("trajectory").as_string(), "traj \"quoted\"\n");
  EXPECT_EQ(v.at("outcome").as_string(), "tool_error");
  EXPECT_EQ(v.at("cached").as_bool(), true);
  EXPECT_EQ(v.at("repairs").as_int64(), 2);
  EXPECT_EQ(v.at("pid").as_int64(), 42);
  EXPECT_EQ(v.at("traceparent").as_string(), r.traceparent);
  for (const char* k : {"seq", "time_ms", "tenant", "server", "tool", "argument_bytes",
                        "result_bytes", "queue_s", "execution_s", "total_s"})
    EXPECT_TRUE(v.contains(k)) << k;
}

}  // namespace
}  // namespace toolbridge::telemetry
