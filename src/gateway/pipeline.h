#pragma once
// The call pipeline: the ordered chain of stages every call runs through, whatever front end
// it came from (MCP over Streamable HTTP or legacy SSE today; batch, parse and the LLM proxy
// next). Built in one place, in the order of the data flow.
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "call/meta_key.h"
#include "call/stage.h"
#include "catalog/catalog.h"
#include "config/config.h"
#include "telemetry/call_log.h"
#include "telemetry/call_trace.h"
#include "telemetry/metrics.h"

namespace toolbridge::otel {
class Exporter;
}
namespace toolbridge::catalog {
class ResolveStage;
}
namespace toolbridge::repair {
class RepairStage;
}
namespace toolbridge::cache {
class CacheStage;
}

namespace toolbridge::policy {
class AdmissionStage;
class BreakerStage;
class SharedRateStage;
class TrajectoryOwnerStage;
}  // namespace toolbridge::policy
namespace toolbridge::replay {
class Cassette;
class Recorder;
}  // namespace toolbridge::replay

namespace toolbridge::gateway {

struct PipelineParts {
  boost::asio::io_context& io;
  const config::Config& config;
  const catalog::Catalog& catalog;
  const std::vector<std::shared_ptr<upstream::Upstream>>& upstreams;
  telemetry::Metrics& metrics;
  const bool& stopping;
  telemetry::CallLog& call_log;
  telemetry::CallTrace* trace = nullptr;  // null: no call trace
  const base::Clock& clock = base::steady_clock();
  otel::Exporter* otel = nullptr;  // null: no span export
  // Record and replay (src/replay/): the cassette calls are answered from and the recorder they
  // are written to; null: off.
  const replay::Cassette* cassette = nullptr;
  replay::Recorder* recorder = nullptr;
};

class Pipeline {
 public:
  explicit Pipeline(const PipelineParts& parts);
  ~Pipeline();

  boost::asio::awaitable<call::Result> run(call::Call& call) const {
    return call::Next(chain_, 0)(call);
  }

  // The stages, in order (for logs, the README and tests).
  std::vector<std::string_view> stage_names() const;
  // The _meta keys the stages read from their callers, in stage order: a front end reads each
  // into the call (MetaKey::read) and leaves it out of what the server is sent.
  static const std::vector<call::MetaKey>& meta_keys();
  const policy::BreakerStage& breakers() const { return *breakers_; }
  const policy::AdmissionStage& admission() const { return *admission_; }
  // For front ends that run admission around their own last stage (the LLM proxy).
  policy::AdmissionStage& admission_stage() const { return *admission_; }
  // For front ends that run their own last stage: every request they answer is measured (metrics,
  // the call log, the trace) as a call is.
  call::Stage& measure_stage() const { return *measure_; }
  // A reload changed the configuration (its content is `config`) and the servers
  // (PipelineParts::upstreams): resolve routes to them from now on; repair, cache, breaker and
  // admission take their settings, the rates and the owner stage theirs (`tenants`,
  // `tenant_rate`, `shared_limits`); `removed` names the servers it took away.
  void servers_changed(const std::vector<std::shared_ptr<upstream::Upstream>>& upstreams,
                       std::unordered_set<std::string> removed, const config::Config& config);
  // A reload replaced `old` (per_session): its bound sessions are routed to it until released.
  void keep_sessions_on(const std::shared_ptr<upstream::Upstream>& old);
  // The clock every stage reads and waits on (and the calls' `started`).
  const base::Clock& clock() const { return clock_; }

 private:
  std::vector<std::unique_ptr<call::Stage>> chain_;
  catalog::ResolveStage* resolve_ = nullptr;
  repair::RepairStage* repair_ = nullptr;
  cache::CacheStage* cache_ = nullptr;
  policy::BreakerStage* breakers_ = nullptr;
  policy::AdmissionStage* admission_ = nullptr;
  policy::SharedRateStage* shared_rate_ = nullptr;
  policy::TrajectoryOwnerStage* owner_ = nullptr;
  call::Stage* measure_ = nullptr;
  const base::Clock& clock_;
};

}  // namespace toolbridge::gateway
