#pragma once
// The deadline stage: refuses an attempt whose deadline (set once with the call's route,
// gateway::Call::set_route) has already passed. Later stages spend only what is left.
#include "base/clock.h"
#include "call/stage.h"

namespace toolbridge::policy {

class DeadlineStage final : public call::Stage {
 public:
  explicit DeadlineStage(const base::Clock& clock) : clock_(clock) {}
  std::string_view name() const override { return "deadline"; }
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next next) override;

 private:
  const base::Clock& clock_;
};

}  // namespace toolbridge::policy
