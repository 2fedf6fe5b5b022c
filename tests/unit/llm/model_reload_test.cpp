// A reload replaces a changed model with a new llm::Model that adopts what the old one learnt:
// the breaker state of workers it keeps, and the routing policy when routing and workers are the
// same.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <string>
#include <vector>

#include "llm/model.h"

namespace toolbridge::llm {
namespace {

config::Model two_workers() {
  config::Model m;
  m.name = "sim";
  m.routing = config::Routing::kPrefixAware;
  m.workers = {{"http://127.0.0.1:1", "w0"}, {"http://127.0.0.1:2", "w1"}};
  return m;
}

const std::string kPrompt = "system\nyou are a careful agent\nuser\nsolve the task\n";

struct ModelReload : ::testing::Test {
  boost::asio::io_context io;
  telemetry::Metrics metrics;
  base::ManualClock clock;

  std::unique_ptr<Model> make(const config::Model& m) {
    return std::make_unique<Model>(io.get_executor(), m, metrics, clock);
  }
  // w0 out of rotation (its breaker open) and kPrompt sent to w1.
  std::unique_ptr<Model> learnt() {
    auto old = make(two_workers());
    for (std::size_t i = 0; i < old->config().breaker_threshold; ++i) old->failed(0);
    EXPECT_FALSE(old->available(0));
    old->policy().routed({"", kPrompt}, 1);
    return old;
  }
};

TEST_F(ModelReload, SameWorkersAndRoutingKeepBreakersAndThePrefixTree) {
  auto old = learnt();
  config::Model changed = two_workers();
  changed.request_timeout = std::chrono::seconds(30);  // not a routing key
  auto fresh = make(changed);
  fresh->adopt(*old);
  EXPECT_FALSE(fresh->available(0));  // still out until its cooldown ends
  EXPECT_TRUE(fresh->available(1));
  const auto choice = fresh->pick({"", kPrompt}, {});
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->worker, 1u);
  EXPECT_EQ(choice->matched, kPrompt.size());  // the tree came along
  clock.advance(changed.breaker_cooldown);
  EXPECT_TRUE(fresh->available(0));
}

TEST_F(ModelReload, AChangedWorkerListKeepsOnlyTheSameWorkersBreakers) {
  auto old = learnt();
  config::Model changed = two_workers();
  changed.workers[1].url = "http://127.0.0.1:3";  // w1 moved: a new worker, empty cache
  auto fresh = make(changed);
  fresh->adopt(*old);
  EXPECT_FALSE(fresh->available(0));
  const auto choice = fresh->pick({"", kPrompt}, {});
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->matched, 0u);  // a fresh policy: nothing was sent to this worker list
}

TEST_F(ModelReload, AnotherRoutingParameterStartsAFreshPolicy) {
  auto old = learnt();
  config::Model changed = two_workers();
  changed.prefix_min_match = 0.9;
  auto fresh = make(changed);
  fresh->adopt(*old);
  const auto choice = fresh->pick({"", kPrompt}, {});
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->matched, 0u);
  EXPECT_FALSE(fresh->available(0));  // the breaker state is the worker's, kept all the same
}

}  // namespace
}  // namespace toolbridge::llm
