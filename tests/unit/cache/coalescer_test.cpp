#include "cache/coalescer.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>

namespace toolbridge::cache {
namespace {

namespace asio = boost::asio;
using call::Call;
using call::Fault;
using call::Result;

Call call_with_id(std::string id,
                  Call::Clock::time_point deadline = Call::Clock::time_point::max()) {
  Call c;
  c.method = "tools/call";
  c.id = std::move(id);
  c.route.display_name = "s__t";
  c.deadline = deadline;
  return c;
}

// Runs a follower's join to completion in the background; the outcome lands in `out`.
void follow(asio::io_context& io, Coalescer& co, Call& call, std::optional<Coalescer::Join>& out) {
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { out = co_await co.join("k", call); }, asio::detached);
}

TEST(CacheCoalescer, NothingInFlightMeansNothingToJoin) {
  asio::io_context io;
  Coalescer co(io, toolbridge::base::steady_clock());
  Call c = call_with_id("1");
  std::optional<Coalescer::Join> j;
  follow(io, co, c, j);
  io.run();
  ASSERT_TRUE(j);
  EXPECT_FALSE(j->joined);
}

TEST(CacheCoalescer, FollowersGetTheLeadersResultUnderTheirOwnIds) {
  asio::io_context io;
  Coalescer co(io, toolbridge::base::steady_clock());
  Coalescer::Lead lead = co.lead("k");
  ASSERT_TRUE(lead);
  EXPECT_FALSE(co.lead("k"));  // one leader per key
  Call a = call_with_id("7"), b = call_with_id("\"x\"");
  std::optional<Coalescer::Join> ja, jb;
  follow(io, co, a, ja);
  follow(io, co, b, jb);
  io.poll();
  EXPECT_EQ(co.followers("k"), 2u);
  EXPECT_FALSE(ja);
  lead.finish(Result{Fault::kNone, R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})", {}}, 2.5);
  io.run();
  ASSERT_TRUE(ja && jb && ja->result && jb->result);
  EXPECT_EQ(ja->result->response, R"({"jsonrpc":"2.0","id":7,"result":{"content":[]}})");
  EXPECT_EQ(jb->result->response, R"({"jsonrpc":"2.0","id":"x","result":{"content":[]}})");
  EXPECT_DOUBLE_EQ(ja->upstream_seconds, 2.5);
  EXPECT_EQ(co.in_flight(), 0u);
}

TEST(CacheCoalescer, AFollowerPastItsDeadlineTimesOutAlone) {
  asio::io_context io;
  Coalescer co(io, toolbridge::base::steady_clock());
  Coalescer::Lead lead = co.lead("k");
  Call late = call_with_id("2", toolbridge::base::steady_clock().now() - std::chrono::seconds(1));
  std::optional<Coalescer::Join> j;
  follow(io, co, late, j);
  io.run();
  ASSERT_TRUE(j && j->result);
  EXPECT_EQ(j->result->fault, Fault::kTimeout);
  EXPECT_NE(j->result->why.find("s__t timed out"), std::string::npos) << j->result->why;
  EXPECT_EQ(co.in_flight(), 1u);  // the leader still runs
}

TEST(CacheCoalescer, ACancelledFollowerStopsWaiting) {
  asio::io_context io;
  Coalescer co(io, toolbridge::base::steady_clock());
  Coalescer::Lead lead = co.lead("k");
  Call c = call_with_id("3");
  std::optional<Coalescer::Join> j;
  follow(io, co, c, j);
  io.poll();
  c.cancel("the agent hung up");
  io.run();
  ASSERT_TRUE(j && j->result);
  EXPECT_EQ(j->result->fault, Fault::kCancelled);
}

TEST(CacheCoalescer, ALeaderThatGivesUpLeavesFollowersToRunTheCall) {
  for (bool cancelled : {false, true}) {
    asio::io_context io;
    Coalescer co(io, toolbridge::base::steady_clock());
    std::optional<Coalescer::Lead> lead(co.lead("k"));
    Call c = call_with_id("4");
    std::optional<Coalescer::Join> j;
    follow(io, co, c, j);
    io.poll();
    if (cancelled) {
      lead->finish(Result::failure(Fault::kCancelled, "gone"), 0);
    } else {
      lead.reset();  // destroyed unfinished
    }
    io.run();
    ASSERT_TRUE(j);
    EXPECT_TRUE(j->joined);
    EXPECT_FALSE(j->result) << cancelled;
    EXPECT_TRUE(co.lead("k"));  // the key is free for a new leader
  }
}

}  // namespace
}  // namespace toolbridge::cache
