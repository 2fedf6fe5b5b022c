#include "call/stage.h"

namespace toolbridge::call {

namespace {

boost::asio::awaitable<Result> no_stage_answered(const Call& call) {
  co_return Result::failure(Fault::kUnavailable,
                            "no stage of the pipeline answered " + call.method);
}

}  // namespace

boost::asio::awaitable<Result> ready(Result result) {
  co_return result;
}

boost::asio::awaitable<Result> Next::operator()(Call& call) const {
  // Not a coroutine itself: it returns the next applicable stage's awaitable, so stepping over
  // stages costs no frame.
  for (std::size_t i = index_; i < chain_->size(); ++i) {
    Stage& stage = *(*chain_)[i];
    if (stage.applies(call)) return stage.handle(call, Next(*chain_, i + 1));
  }
  return no_stage_answered(call);
}

}  // namespace toolbridge::call
