#include "frontend/call_run.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <memory>
#include <string>
#include <vector>

#include "gateway/pipeline.h"
#include "unit/pipeline_support.h"

namespace toolbridge::frontend {
namespace {

using call::Fault;
using call::Result;

// A pipeline with no servers (EmptyPipeline): the resolve stage answers each call at once, as the
// memory cache answers a hit.
class CallRunTest : public ::testing::Test {
 protected:
  std::shared_ptr<CallRun> run_of(const std::vector<std::string>& tools, bool fail_fast) {
    auto run = std::make_shared<CallRun>(io_, pipeline_, fail_fast, false, 1 << 20);
    run->calls.resize(tools.size());
    run->results.resize(tools.size());
    for (std::size_t i = 0; i < tools.size(); ++i) {
      if (tools[i].empty()) {
        run->results[i] = Result::failure(Fault::kInvalidParams, "entry " + std::to_string(i));
      } else {
        run->calls[i] = make_tool_call(i, tools[i], CheckedArguments{"{}"}, scope_, {});
      }
    }
    return run;
  }

  // Starts `run` as a front end does, on the io_context, and runs it to the end.
  void start(const std::shared_ptr<CallRun>& run, bool& done_when_started) {
    boost::asio::post(io_, [&] {
      run->start();
      done_when_started = run->done();
    });
    io_.run();
  }

  testing::EmptyPipeline empty_;
  boost::asio::io_context& io_ = empty_.io;
  gateway::Pipeline& pipeline_ = empty_.pipeline;
  CallScope scope_;
};

TEST_F(CallRunTest, CallsAnsweredAtOnceAreAllFinishedInOrderWhenStartReturns) {
  const auto run = run_of({"a__one", "", "a__three", "a__four"}, false);
  bool done_when_started = false;
  start(run, done_when_started);
  EXPECT_TRUE(done_when_started);
  for (std::size_t i : {0u, 2u, 3u}) {
    ASSERT_TRUE(run->results[i]);
    EXPECT_EQ(run->results[i]->fault, Fault::kInvalidParams);
    EXPECT_NE(run->results[i]->why.find(i == 0   ? "a__one"
                                        : i == 2 ? "a__three"
                                                 : "a__four"),
              std::string::npos)
        << run->results[i]->why;
  }
  EXPECT_EQ(run->results[1]->why, "entry 1");
  EXPECT_FALSE(run->stopped_by);
}

// As when each call had a coroutine of its own: a call answered before the failure keeps its
// answer, an entry that cannot run stops the run, and the calls after it are not run.
TEST_F(CallRunTest, AFailFastRunStopsAtTheEntryThatCannotRun) {
  const auto run = run_of({"a__one", "", "a__three"}, true);
  bool done_when_started = false;
  start(run, done_when_started);
  EXPECT_TRUE(done_when_started);
  EXPECT_NE(run->results[0]->why.find("a__one"), std::string::npos) << run->results[0]->why;
  EXPECT_EQ(run->results[1]->why, "entry 1");
  EXPECT_EQ(run->results[2]->fault, Fault::kCancelled);
  EXPECT_EQ(run->results[2]->why, "not completed: call 1 failed and the batch is fail_fast");
  EXPECT_EQ(run->stopped_by, 1u);
}

}  // namespace
}  // namespace toolbridge::frontend
