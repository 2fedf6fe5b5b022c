#include "gateway/pipeline.h"

#include <gtest/gtest.h>

#include "pipeline_support.h"
#include "stage_support.h"

namespace toolbridge::gateway {
namespace {

// Records its name into a shared trace; answers if told to, else passes the call on.
class TraceStage final : public call::Stage {
 public:
  TraceStage(std::string name, std::vector<std::string>& trace, bool applies = true,
             bool answers = false)
      : name_(std::move(name)), trace_(trace), applies_(applies), answers_(answers) {}
  std::string_view name() const override { return name_; }
  bool applies(const call::Call&) const override { return applies_; }
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next next) override {
    trace_.push_back(name_);
    if (answers_) co_return call::Result::failure(call::Fault::kInvalidParams, name_ + " answered");
    co_return co_await next(call);
  }

 private:
  std::string name_;
  std::vector<std::string>& trace_;
  bool applies_, answers_;
};

TEST(Next, RunsStagesInOrderAndStepsOverThoseThatDoNotApply) {
  boost::asio::io_context io;
  std::vector<std::string> trace;
  std::vector<std::unique_ptr<call::Stage>> chain;
  chain.push_back(std::make_unique<TraceStage>("a", trace));
  chain.push_back(std::make_unique<TraceStage>("skipped", trace, false));
  chain.push_back(std::make_unique<TraceStage>("b", trace));
  chain.push_back(std::make_unique<TraceStage>("answers", trace, true, true));
  chain.push_back(std::make_unique<TraceStage>("never", trace));
  call::Call call;
  const call::Result r = testing::run(io, call::Next(chain, 0)(call));
  EXPECT_EQ(trace, (std::vector<std::string>{"a", "b", "answers"}));
  EXPECT_EQ(r.fault, call::Fault::kInvalidParams);
  EXPECT_EQ(r.why, "answers answered");
}

TEST(Next, AChainThatNobodyAnswersSaysSo) {
  boost::asio::io_context io;
  std::vector<std::string> trace;
  std::vector<std::unique_ptr<call::Stage>> chain;
  chain.push_back(std::make_unique<TraceStage>("a", trace));
  call::Call call;
  call.method = "tools/call";
  const call::Result r = testing::run(io, call::Next(chain, 0)(call));
  EXPECT_EQ(r.fault, call::Fault::kUnavailable);
  EXPECT_NE(r.why.find("no stage"), std::string::npos);
}

TEST(Pipeline, IsBuiltInTheOrderOfTheDataFlow) {
  const testing::EmptyPipeline empty;
  EXPECT_EQ(empty.pipeline.stage_names(),
            (std::vector<std::string_view>{
                "surface", "resolve", "authorize", "measure", "owner", "repair", "idempotency",
                "cache", "shared_rate", "admission", "retry", "breaker", "deadline", "dispatch"}));
}

}  // namespace
}  // namespace toolbridge::gateway
