#include "gateway/pipeline.h"

#include "cache/cache_meta.h"
#include "cache/cache_stage.h"
#include "catalog/resolve.h"
#include "gateway/dispatch.h"
#include "gateway/measure.h"
#include "idempotency/idempotency_stage.h"
#include "idempotency/key_meta.h"
#include "policy/admission_stage.h"
#include "policy/authorize.h"
#include "policy/breaker_stage.h"
#include "policy/deadline.h"
#include "policy/retry.h"
#include "policy/shared_rate.h"
#include "policy/trajectory_owner.h"
#include "repair/answer.h"
#include "repair/repair_stage.h"
#include "replay/replay_stage.h"
#include "surfaces/surface_stage.h"
#include "upstream/upstream.h"

namespace toolbridge::gateway {

Pipeline::Pipeline(const PipelineParts& p) : clock_(p.clock) {
  // surface → resolve → authorize → measure → owner → repair → replay → idempotency → cache →
  // shared_rate → admission → retry → breaker → deadline → dispatch
  // A call made through a tool surface names its tool as the surface shows it.
  chain_.push_back(
      std::make_unique<surfaces::SurfaceStage>([&upstreams = p.upstreams](const surfaces::Tool& t) {
        for (const auto& up : upstreams) {
          if (up->name() == t.server) return up->config().repair_for(t.original).repair;
        }
        return config::RepairMode::kOff;
      }));
  auto resolve = std::make_unique<catalog::ResolveStage>(p.catalog, p.upstreams, p.stopping,
                                                         p.config.gateway.separator);
  resolve_ = resolve.get();
  chain_.push_back(std::move(resolve));
  chain_.push_back(std::make_unique<policy::AuthorizeStage>());
  auto measure = std::make_unique<MeasureStage>(p.metrics, p.call_log, p.trace, p.clock, p.otel);
  measure_ = measure.get();
  chain_.push_back(std::move(measure));
  auto owner = std::make_unique<policy::TrajectoryOwnerStage>(p.io, p.config.gateway, p.clock);
  owner_ = owner.get();
  chain_.push_back(std::move(owner));
  auto repair =
      std::make_unique<repair::RepairStage>(catalog::schemas_of(p.catalog), p.config, p.metrics);
  repair_ = repair.get();
  chain_.push_back(std::move(repair));
  // Record and replay: a replayed call takes no slot, reaches no cache and no server.
  if (p.cassette || p.recorder) {
    chain_.push_back(std::make_unique<replay::ReplayStage>(p.config, p.cassette, p.recorder,
                                                           p.metrics, p.clock));
  }
  // A retry with the key of a call already run takes no slot either, nor runs again.
  chain_.push_back(
      std::make_unique<idempotency::IdempotencyStage>(p.io, p.config.gateway, p.metrics, p.clock));
  // A hit takes no admission slot (nor a share of its tenant's rate).
  auto cache = std::make_unique<cache::CacheStage>(p.io, p.config, p.catalog, p.metrics, p.clock);
  cache_ = cache.get();
  chain_.push_back(std::move(cache));
  auto rate = std::make_unique<policy::SharedRateStage>(p.io, p.config.gateway, p.metrics, p.clock);
  shared_rate_ = rate.get();
  chain_.push_back(std::move(rate));
  auto admission = std::make_unique<policy::AdmissionStage>(p.io, p.config, p.metrics, p.clock);
  admission_ = admission.get();
  chain_.push_back(std::move(admission));
  chain_.push_back(std::make_unique<policy::RetryStage>(p.io, p.clock, p.stopping));
  auto breakers = std::make_unique<policy::BreakerStage>(p.config.servers, p.metrics, p.clock);
  breakers_ = breakers.get();
  chain_.push_back(std::move(breakers));
  chain_.push_back(std::make_unique<policy::DeadlineStage>(p.clock));
  chain_.push_back(std::make_unique<DispatchStage>(p.io, p.clock, p.stopping));
}

Pipeline::~Pipeline() = default;

void Pipeline::servers_changed(const std::vector<std::shared_ptr<upstream::Upstream>>& upstreams,
                               std::unordered_set<std::string> removed,
                               const config::Config& config) {
  resolve_->set_upstreams(upstreams, std::move(removed));
  repair_->set_servers(config.servers);
  cache_->set_servers(config.servers);
  breakers_->set_servers(config.servers);
  admission_->admission().reconfigure(config);
  shared_rate_->reconfigure();
  owner_->reconfigure();
}

void Pipeline::keep_sessions_on(const std::shared_ptr<upstream::Upstream>& old) {
  resolve_->keep_sessions_on(old);
}

const std::vector<call::MetaKey>& Pipeline::meta_keys() {
  static const std::vector<call::MetaKey> keys{
      repair::request_meta_key(), idempotency::key_meta_key(), cache::request_meta_key()};
  return keys;
}

std::vector<std::string_view> Pipeline::stage_names() const {
  std::vector<std::string_view> names;
  for (const auto& s : chain_) names.push_back(s->name());
  return names;
}

}  // namespace toolbridge::gateway
