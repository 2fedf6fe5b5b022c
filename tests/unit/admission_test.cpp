#include "policy/admission.h"

#include <gtest/gtest.h>

#include <list>

namespace toolbridge::policy {
namespace {

using namespace std::chrono_literals;

config::Config with_server(std::size_t limit) {
  config::Config c;
  config::Server s;
  s.name = "search";
  s.concurrency_limit = limit;
  c.servers.push_back(s);
  return c;
}

struct Waiter final : AdmissionWaiter {
  Waiter(const AdmissionRequest& r, base::Clock::time_point now, std::vector<std::string>& log)
      : AdmissionWaiter(r, now), log(log) {}
  void admitted(Permit p) override {
    permit = std::move(p);
    log.push_back(tenant + "/" + trajectory);
  }
  std::vector<std::string>& log;
  Permit permit;
};

struct AdmissionTest : ::testing::Test {
  base::ManualClock clock;
  std::shared_ptr<Admission> admission;
  std::vector<std::string> log;
  std::list<Waiter> waiters;  // stable addresses

  void build(const config::Config& c) { admission = std::make_shared<Admission>(c, clock); }
  // A waiter leaves the queue before it is destroyed (the stage's waiter does it itself).
  void TearDown() override {
    for (auto& w : waiters) {
      if (w.queued()) admission->withdraw(w);
    }
  }
  Waiter& queue(std::string tenant, std::string trajectory = "t", std::string tool = "q",
                std::string server = "search") {
    const AdmissionRequest r{server, tool, tenant, trajectory};
    Waiter& w = waiters.emplace_back(r, clock.now(), log);
    EXPECT_TRUE(admission->enqueue(w));
    return w;
  }
  // Releases the permit of the first admitted waiter still holding one.
  void finish_one() {
    for (auto& w : waiters) {
      if (w.permit) {
        w.permit.release();
        return;
      }
    }
    FAIL() << "no call holds a permit";
  }
};

// Issue 33: without a concurrency_limit a shared or pool server is admitted by its capacity
// (max_in_flight × instances), so calls past it wait instead of being refused by the instance;
// a per_session server (an instance per trajectory) has no shared capacity to guard.
TEST_F(AdmissionTest, WithoutALimitASharedServerIsLimitedByItsCapacity) {
  build(with_server(0));
  ASSERT_TRUE(admission->applies("search"));
  EXPECT_EQ(admission->servers()[0].limit, 256u);
  config::Config pool = with_server(0);
  pool.servers[0].policy = config::Policy::kPool;
  pool.servers[0].max_in_flight = 8;
  pool.servers[0].max_instances = 3;
  build(pool);
  EXPECT_EQ(admission->servers()[0].limit, 24u);
  // Past it a call waits (it is not refused), and a finished one admits it.
  for (int i = 0; i < 25; ++i) queue("x", std::to_string(i));
  EXPECT_EQ(admission->servers()[0].in_flight, 24u);
  EXPECT_EQ(admission->servers()[0].queued, 1u);
  finish_one();
  EXPECT_EQ(admission->servers()[0].in_flight, 24u);
  EXPECT_EQ(admission->servers()[0].queued, 0u);
}

TEST_F(AdmissionTest, NoLimitConfiguredMeansTheStageIsSteppedOver) {
  config::Config per_session = with_server(0);
  per_session.servers[0].policy = config::Policy::kPerSession;
  build(per_session);
  EXPECT_FALSE(admission->applies("search"));
  build(with_server(3));
  EXPECT_TRUE(admission->applies("search"));
  EXPECT_FALSE(admission->applies("other"));
  config::Config c = with_server(0);
  c.gateway.trajectory_limit = 1;
  build(c);
  EXPECT_TRUE(admission->applies("search"));
}

TEST_F(AdmissionTest, AServerLimitAdmitsUpToItThenQueuesAndAReleaseAdmitsTheNext) {
  build(with_server(2));
  Permit a = admission->try_admit({"search", "q", "x", "1"});
  Permit b = admission->try_admit({"search", "q", "x", "2"});
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  EXPECT_FALSE(admission->try_admit({"search", "q", "x", "3"}));
  Waiter& c = queue("x", "3");
  EXPECT_TRUE(c.queued());
  EXPECT_FALSE(c.permit);
  EXPECT_EQ(admission->servers()[0].in_flight, 2u);
  a.release();
  EXPECT_TRUE(c.permit);
  EXPECT_FALSE(c.queued());
  EXPECT_EQ(admission->servers()[0].in_flight, 2u);
  // Released exactly once: a second release and a moved-from permit give nothing back.
  a.release();
  Permit moved = std::move(b);
  b.release();
  EXPECT_EQ(admission->servers()[0].in_flight, 2u);
  moved.release();
  c.permit.release();
  EXPECT_EQ(admission->servers()[0].in_flight, 0u);
}

// A reload (docs/reload.md): a limit that grew admits waiting calls at once; one that shrank
// lets calls in flight finish and admits none until they are under it; a new server is known.
TEST_F(AdmissionTest, AReloadChangesServerLimitsInPlace) {
  build(with_server(1));
  Permit a = admission->try_admit({"search", "q", "x", "1"});
  ASSERT_TRUE(a);
  Waiter& b = queue("x", "2");
  Waiter& c = queue("x", "3");
  EXPECT_FALSE(b.permit);

  config::Config grown = with_server(3);
  config::Server added;
  added.name = "added";
  added.concurrency_limit = 5;
  grown.servers.push_back(added);
  admission->reconfigure(grown);
  EXPECT_TRUE(b.permit);
  EXPECT_TRUE(c.permit);
  EXPECT_EQ(admission->servers()[0].in_flight, 3u);
  ASSERT_EQ(admission->servers().size(), 2u);
  EXPECT_EQ(admission->servers()[1].limit, 5u);

  admission->reconfigure(with_server(1));
  EXPECT_EQ(admission->servers()[0].limit, 1u);
  EXPECT_EQ(admission->servers()[0].in_flight, 3u);  // calls in flight keep their permits
  a.release();
  b.permit.release();
  EXPECT_FALSE(admission->try_admit({"search", "q", "x", "4"}));  // still one in flight
  c.permit.release();
  EXPECT_TRUE(admission->try_admit({"search", "q", "x", "5"}));
}

TEST_F(AdmissionTest, ANewcomerDoesNotOvertakeCallsThatWait) {
  build(with_server(1));
  Permit a = admission->try_admit({"search", "q", "x", "1"});
  queue("y");
  a.release();
  EXPECT_FALSE(admission->try_admit({"search", "q", "z", "1"}));
  EXPECT_EQ(log, (std::vector<std::string>{"y/t"}));
}

TEST_F(AdmissionTest, AGreedyTenantDoesNotStarveALightOne) {
  build(with_server(1));
  Permit first = admission->try_admit({"search", "q", "greedy", "0"});
  for (int i = 0; i < 100; ++i) queue("greedy", std::to_string(i));
  for (int i = 0; i < 5; ++i) queue("light", std::to_string(i));
  first.release();
  for (int i = 0; i < 20; ++i) finish_one();
  // Round robin between the two: the light tenant's 5 calls are among the first 10 admitted.
  int light_in_first_ten = 0;
  for (std::size_t i = 0; i < 10; ++i) light_in_first_ten += log[i].starts_with("light/");
  EXPECT_EQ(light_in_first_ten, 5);
  // FIFO within a tenant.
  EXPECT_EQ(log[0], "greedy/0");
  EXPECT_EQ(log[2], "greedy/1");
  EXPECT_EQ(log[1], "light/0");
  EXPECT_EQ(log[3], "light/1");
}

TEST_F(AdmissionTest, WeightsShareTheServerInProportion) {
  config::Config c = with_server(1);
  c.gateway.tenants["heavy"].weight = 3;
  c.gateway.tenants["plain"].weight = 1;
  build(c);
  Permit first = admission->try_admit({"search", "q", "heavy", "0"});
  for (int i = 0; i < 40; ++i) {
    queue("heavy");
    queue("plain");
  }
  first.release();
  for (int i = 0; i < 39; ++i) finish_one();
  int heavy = 0;
  for (const auto& l : log) heavy += l.starts_with("heavy/");
  EXPECT_EQ(log.size(), 40u);
  EXPECT_EQ(heavy, 30);
}

TEST_F(AdmissionTest, ATenantAtItsLimitIsPassedOverAndOthersGoFirst) {
  config::Config c = with_server(10);
  c.gateway.tenants["a"].limit = 1;
  build(c);
  EXPECT_EQ(admission->tenant_limit("a"), 1u);
  EXPECT_EQ(admission->tenant_limit("b"), 0u);
  Permit a1 = admission->try_admit({"search", "q", "a", "1"});
  ASSERT_TRUE(a1);
  EXPECT_FALSE(admission->try_admit({"search", "q", "a", "2"}));
  Waiter& a2 = queue("a", "2");
  Waiter& b1 = queue("b", "1");
  EXPECT_FALSE(a2.permit);
  EXPECT_TRUE(b1.permit);
  EXPECT_EQ(admission->tenant_in_flight("a"), 1u);
  a1.release();
  EXPECT_TRUE(a2.permit);
}

TEST_F(AdmissionTest, TheDefaultTenantLimitAppliesToEveryTenantAndItsSlotIsForgotten) {
  config::Config c = with_server(0);
  c.gateway.tenant_limit = 2;
  build(c);
  Permit p1 = admission->try_admit({"search", "q", "run", "1"});
  Permit p2 = admission->try_admit({"search", "q", "run", "2"});
  EXPECT_FALSE(admission->try_admit({"search", "q", "run", "3"}));
  EXPECT_TRUE(admission->try_admit({"search", "q", "other", "3"}));
  EXPECT_EQ(admission->tenant_in_flight("run"), 2u);
  p1.release();
  p2.release();
  EXPECT_EQ(admission->tenant_in_flight("run"), 0u);
}

TEST_F(AdmissionTest, TrajectoryAndToolLimitsHold) {
  config::Config c = with_server(0);
  c.gateway.trajectory_limit = 1;
  c.servers[0].tool_limits["slow"] = 1;
  build(c);
  Permit t1 = admission->try_admit({"search", "fast", "x", "traj"});
  ASSERT_TRUE(t1);
  EXPECT_FALSE(admission->try_admit({"search", "fast", "x", "traj"}));
  EXPECT_EQ(admission->trajectory_in_flight("traj"), 1u);
  Permit s1 = admission->try_admit({"search", "slow", "x", "other"});
  ASSERT_TRUE(s1);
  EXPECT_FALSE(admission->try_admit({"search", "slow", "x", "third"}));
  // A call held by its own limit (tool) lets another tenant's call to another tool go.
  Waiter& slow = queue("x", "third", "slow");
  Waiter& fast = queue("y", "fourth", "fast");
  Waiter& same = queue("z", "traj", "fast");  // its trajectory is full
  EXPECT_FALSE(slow.permit);
  EXPECT_TRUE(fast.permit);
  EXPECT_FALSE(same.permit);
  EXPECT_EQ(admission->withdraw(same).held_by, "gateway.trajectory_limit (1)");
  s1.release();
  EXPECT_TRUE(slow.permit);
  t1.release();
  EXPECT_EQ(admission->trajectory_in_flight("traj"), 0u);
}

TEST_F(AdmissionTest, TheGlobalLimitIsSharedByServers) {
  config::Config c = with_server(0);
  c.gateway.max_calls_in_flight = 2;
  config::Server other;
  other.name = "fetch";
  c.servers.push_back(other);
  build(c);
  Permit a = admission->try_admit({"search", "q", "x", "1"});
  Permit b = admission->try_admit({"fetch", "q", "x", "2"});
  EXPECT_FALSE(admission->try_admit({"fetch", "q", "x", "3"}));
  Waiter& w1 = queue("x", "3", "q", "fetch");
  Waiter& w2 = queue("x", "4", "q", "search");
  EXPECT_EQ(admission->global().in_use, 2u);
  a.release();
  EXPECT_NE(bool(w1.permit), bool(w2.permit));
  b.release();
  EXPECT_TRUE(w1.permit);
  EXPECT_TRUE(w2.permit);
}

TEST_F(AdmissionTest, AFullQueueShedsWithAMessageAnAgentCanActOn) {
  config::Config c = with_server(1);
  c.gateway.admission_queue_size = 2;
  build(c);
  Permit a = admission->try_admit({"search", "q", "x", "1"});
  clock.advance(2s);
  a.release();  // the server's mean latency is now 2 s
  a = admission->try_admit({"search", "q", "x", "1"});
  queue("x");
  queue("x");
  Waiter extra({"search", "q", "x", "t"}, clock.now(), log);
  EXPECT_FALSE(admission->enqueue(extra));
  EXPECT_FALSE(extra.queued());
  // 2 queued + this one, one at a time, 2 s each.
  EXPECT_EQ(admission->overloaded_message("search"),
            "search is overloaded: 2 calls queued; retry in ~6 s");
}

TEST_F(AdmissionTest, AWithdrawnCallReportsItsPositionAndHoldsNothing) {
  build(with_server(1));
  Permit a = admission->try_admit({"search", "q", "x", "1"});
  queue("x", "2");
  Waiter& second = queue("x", "3");
  queue("y", "4");
  const Admission::Withdrawn w = admission->withdraw(second);
  EXPECT_EQ(w.position, 2u);
  EXPECT_EQ(w.queued, 3u);
  EXPECT_EQ(w.held_by, "servers.search.concurrency_limit (1)");
  EXPECT_FALSE(second.queued());
  EXPECT_EQ(admission->queued_total(), 2u);
  a.release();
  a = {};
  finish_one();
  EXPECT_EQ(log, (std::vector<std::string>{"x/2", "y/4"}));
  EXPECT_FALSE(second.permit);
}

TEST_F(AdmissionTest, APermitReleasedWhileBeingAdmittedDoesNotConfuseTheQueue) {
  build(with_server(1));
  struct Dropper final : AdmissionWaiter {
    using AdmissionWaiter::AdmissionWaiter;
    int admitted_count = 0;
    void admitted(Permit p) override {
      ++admitted_count;
      p.release();  // answered at once
    }
  };
  Permit a = admission->try_admit({"search", "q", "x", "1"});
  std::list<Dropper> droppers;
  for (int i = 0; i < 5; ++i) {
    Dropper& d = droppers.emplace_back(AdmissionRequest{"search", "q", "x", "t"}, clock.now());
    ASSERT_TRUE(admission->enqueue(d));
  }
  a.release();
  for (const auto& d : droppers) EXPECT_EQ(d.admitted_count, 1);
  EXPECT_EQ(admission->queued_total(), 0u);
  EXPECT_EQ(admission->servers()[0].in_flight, 0u);
}

}  // namespace
}  // namespace toolbridge::policy
