#pragma once
// The measure stage: every routed call is counted once, by server, tool (or method) and outcome,
// with its latency as the gateway saw it — whatever front end it came from.
#include <array>
#include <string>
#include <unordered_map>

#include "call/stage.h"
#include "telemetry/metrics.h"

namespace toolbridge::gateway {

class MeasureStage final : public Stage {
 public:
  explicit MeasureStage(telemetry::Metrics& metrics);
  std::string_view name() const override { return "measure"; }
  boost::asio::awaitable<Result> handle(Call& call, Next next) override;

 private:
  // The series of one (server, tool) pair, looked up once: a call bumps cells, it builds no
  // label strings.
  struct Series {
    telemetry::Histogram* duration = nullptr;
    std::array<std::uint64_t*, kFaultCount> calls{};  // by fault, created on first use
  };
  Series& series(const Call& call);

  telemetry::Metrics& metrics_;
  std::unordered_map<std::string, Series> series_;  // by display name (unique per pair)
};

}  // namespace toolbridge::gateway
