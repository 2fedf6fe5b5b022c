#pragma once
// A stage of the call pipeline either answers a call or passes it on (the shape of Envoy's HTTP
// filter chain). The chain is built in one place (pipeline.cpp); front ends only run it.
#include <boost/asio/awaitable.hpp>
#include <memory>
#include <vector>

#include "call/call.h"

namespace toolbridge::call {

class Stage;

// The rest of the chain after a stage. Stages that do not apply to a call are stepped over
// without a coroutine frame, so a configured-but-idle stage costs one virtual call.
class Next {
 public:
  Next(const std::vector<std::unique_ptr<Stage>>& chain, std::size_t index)
      : chain_(&chain), index_(index) {}
  boost::asio::awaitable<Result> operator()(Call& call) const;

 private:
  const std::vector<std::unique_ptr<Stage>>* chain_;
  std::size_t index_;
};

// An awaitable that is already answered (for stages that decide without waiting).
boost::asio::awaitable<Result> ready(Result result);

class Stage {
 public:
  virtual ~Stage() = default;
  // The stage's name in the chain (for logs and the README's picture of it).
  virtual std::string_view name() const = 0;
  // False to be stepped over for this call (e.g. retry for a server with max_retries 0).
  virtual bool applies(const Call&) const { return true; }
  virtual boost::asio::awaitable<Result> handle(Call& call, Next next) = 0;
};

// A stage owned elsewhere (the pipeline's), placed in a front end's own chain.
class BorrowedStage final : public Stage {
 public:
  explicit BorrowedStage(Stage& stage) : stage_(stage) {}
  std::string_view name() const override { return stage_.name(); }
  bool applies(const Call& call) const override { return stage_.applies(call); }
  boost::asio::awaitable<Result> handle(Call& call, Next next) override {
    return stage_.handle(call, next);
  }

 private:
  Stage& stage_;
};

}  // namespace toolbridge::call
