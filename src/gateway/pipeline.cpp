#include "gateway/pipeline.h"

#include "catalog/resolve.h"
#include "gateway/dispatch.h"
#include "gateway/measure.h"
#include "policy/breaker_stage.h"
#include "policy/deadline.h"
#include "policy/retry.h"
#include "repair/repair_stage.h"

namespace toolbridge::gateway {

Pipeline::Pipeline(const PipelineParts& p) {
  // resolve → [repair] → [cache] → [admission] → retry → breaker → deadline → dispatch
  chain_.push_back(std::make_unique<catalog::ResolveStage>(p.catalog, p.upstreams, p.stopping));
  chain_.push_back(std::make_unique<MeasureStage>(p.metrics));
  // Repair, cache and admission go here, in that order, as their issues land.
  chain_.push_back(std::make_unique<repair::RepairStage>(p.catalog, p.config, p.metrics));
  chain_.push_back(std::make_unique<policy::RetryStage>(p.io, p.clock, p.stopping));
  auto breakers = std::make_unique<policy::BreakerStage>(p.config.servers, p.metrics, p.clock);
  breakers_ = breakers.get();
  chain_.push_back(std::move(breakers));
  chain_.push_back(std::make_unique<policy::DeadlineStage>(p.clock));
  chain_.push_back(std::make_unique<DispatchStage>(p.io, p.clock, p.stopping));
}

Pipeline::~Pipeline() = default;

std::vector<std::string_view> Pipeline::stage_names() const {
  std::vector<std::string_view> names;
  for (const auto& s : chain_) names.push_back(s->name());
  return names;
}

}  // namespace toolbridge::gateway
