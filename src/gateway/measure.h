#pragma once
// The measure stage: every routed call is counted once, by server, tool (or method) and outcome,
// with its latency as the gateway saw it — whatever front end it came from.
#include "call/stage.h"
#include "telemetry/metrics.h"

namespace toolbridge::gateway {

class MeasureStage final : public Stage {
 public:
  explicit MeasureStage(telemetry::Metrics& metrics);
  std::string_view name() const override { return "measure"; }
  boost::asio::awaitable<Result> handle(Call& call, Next next) override;

 private:
  telemetry::Metrics& metrics_;
};

}  // namespace toolbridge::gateway
