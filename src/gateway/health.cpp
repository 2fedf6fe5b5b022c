// What the gateway reports of itself: GET /healthz (the servers, their instances and breakers,
// sessions, admission, the config's generation, what a reload is still draining) and the gauges
// of /metrics that read the same live state (docs/endpoints.md, docs/observability.md).
#include <boost/json.hpp>

#include "gateway/gateway.h"
#include "gateway/reload.h"
#include "policy/admission_stage.h"
#include "policy/breaker_stage.h"
#include "surfaces/registry.h"

namespace toolbridge::gateway {

namespace bj = boost::json;

namespace {

std::string_view breaker_state(const Pipeline& pipeline, const std::string& server) {
  const policy::Breaker* b = pipeline.breakers().find(server);
  return b ? b->state_name() : "closed";
}

}  // namespace

void Gateway::register_metrics() {
  metrics_.gauge(
      "toolbridge_call_log_bytes",
      "Bytes the trajectory view keeps of finished calls (at most "
      "gateway.call_log_max_bytes).",
      [this](auto& out) { out.emplace_back("", static_cast<double>(call_log_.bytes())); });
  metrics_.gauge("toolbridge_call_log_trajectories", "Trajectories the trajectory view keeps.",
                 [this](auto& out) {
                   out.emplace_back("", static_cast<double>(call_log_.trajectory_count()));
                 });
  metrics_.describe("toolbridge_restarts_total", "counter", "Server instance restarts.");
  metrics_.describe("toolbridge_start_failures_total", "counter", "Failed server start attempts.");
  metrics_.describe("toolbridge_recycles_total", "counter",
                    "Instances retired on purpose, by reason (max_calls, max_age, max_rss, idle).");
  metrics_.gauge("toolbridge_in_flight", "Requests currently forwarded and unanswered, by server.",
                 [this](auto& out) {
                   for (const auto& up : upstreams_) {
                     out.emplace_back(telemetry::labels({{"server", up->name()}}),
                                      static_cast<double>(up->in_flight()));
                   }
                 });
  metrics_.gauge("toolbridge_instances",
                 "Server instances by state (starting, idle, busy, retiring).", [this](auto& out) {
                   for (const auto& up : upstreams_) {
                     const auto c = up->census();
                     for (const auto& [state, n] :
                          {std::pair{"starting", c.starting}, std::pair{"idle", c.idle},
                           std::pair{"busy", c.busy}, std::pair{"retiring", c.retiring}}) {
                       out.emplace_back(
                           telemetry::labels({{"server", up->name()}, {"state", state}}),
                           static_cast<double>(n));
                     }
                   }
                 });
  metrics_.gauge("toolbridge_spares",
                 "Ready instances waiting for a new session (per_session) or call (pool).",
                 [this](auto& out) {
                   for (const auto& up : upstreams_) {
                     out.emplace_back(telemetry::labels({{"server", up->name()}}),
                                      static_cast<double>(up->census().spares));
                   }
                 });
  metrics_.gauge("toolbridge_sessions_bound", "Sessions holding their own instance (per_session).",
                 [this](auto& out) {
                   for (const auto& up : upstreams_) {
                     out.emplace_back(telemetry::labels({{"server", up->name()}}),
                                      static_cast<double>(up->census().sessions));
                   }
                 });
  metrics_.gauge("toolbridge_sessions", "Open downstream MCP sessions.", [this](auto& out) {
    out.emplace_back("", static_cast<double>(sessions_.size()));
  });
  metrics_.gauge("toolbridge_breaker_state",
                 "A server's circuit breaker: 0 closed, 1 half open (probing), 2 open.",
                 [this](auto& out) {
                   for (const auto& up : upstreams_) {
                     const std::string_view state = breaker_state(*pipeline_, up->name());
                     const double v = state == "open" ? 2 : state == "half_open" ? 1 : 0;
                     out.emplace_back(telemetry::labels({{"server", up->name()}}), v);
                   }
                 });
  if (trace_) {
    const std::string help =
        "Lines of the call trace written to its file, and dropped because the writer fell "
        "behind (the buffer was full) or the file could not be written.";
    metrics_.gauge("toolbridge_trace_lines_total", help, [this](auto& out) {
      out.emplace_back(telemetry::labels({{"result", "written"}}),
                       static_cast<double>(trace_->written()));
      out.emplace_back(telemetry::labels({{"result", "dropped"}}),
                       static_cast<double>(trace_->dropped()));
    });
    metrics_.describe("toolbridge_trace_lines_total", "counter", help);
  }
  if (otel_) register_otel_metrics();
  metrics_.gauge("toolbridge_tools", "Tools in the aggregated catalog.", [this](auto& out) {
    out.emplace_back("", static_cast<double>(catalog_.tool_count()));
  });
}

std::string Gateway::health_json() const {
  bj::object servers;
  bool all_ready = true;
  for (const auto& up : upstreams_) {
    auto inst = up->any_ready();
    const auto census = up->census();
    bj::object instances{{"starting", census.starting},
                         {"idle", census.idle},
                         {"busy", census.busy},
                         {"retiring", census.retiring}};
    bj::object recycles;
    for (const auto& [reason, n] : up->recycles()) recycles[reason] = n;
    bj::array pids;
    for (pid_t pid : up->pids()) pids.push_back(pid);
    bj::object s{{"state", upstream::to_string(up->state())},
                 {"policy", config::to_string(up->config().policy)},
                 {"restarts", up->restarts()},
                 {"tools", up->catalog() ? up->catalog()->tools.size() : 0},
                 {"in_flight", up->in_flight()},
                 {"breaker", breaker_state(*pipeline_, up->name())},
                 {"instances", std::move(instances)},
                 {"spares", census.spares},
                 {"sessions_bound", census.sessions},
                 {"recycles", std::move(recycles)},
                 {"pids", std::move(pids)}};
    if (inst) {
      s["pid"] = inst->pid();
      s["protocol_version"] = mcp::to_string(inst->version());
      // Its lists could not be read again: the last good ones are served, retried with backoff.
      if (!inst->list_error().empty()) {
        s["list_error"] = inst->list_error();
        s["list_failures"] = inst->list_failures();
        all_ready = false;
      }
    }
    if (!up->last_error().empty()) s["last_error"] = up->last_error();
    if (up->state() == upstream::Upstream::State::kBackoff)
      s["retry_in_seconds"] = up->retry_in_seconds();
    if (up->state() != upstream::Upstream::State::kReady &&
        up->state() != upstream::Upstream::State::kDisabled) {
      all_ready = false;
    }
    servers[up->name()] = std::move(s);
  }
  bj::object out{
      {"status", stopping_   ? "stopping"
                 : all_ready ? "ok"
                             : "degraded"},
      {"sessions", sessions_.size()},
      {"trajectories", trajectory_owners_.size()},
      {"tools", catalog_.tool_count()},
      {"servers", std::move(servers)},
      {"admission", pipeline_->admission().health()},
      {"config", bj::object{{"generation", reloader_->generation()}, {"hash", reloader_->hash()}}},
      // Versions of servers a reload removed or replaced that calls or sessions still hold.
      {"draining", reloader_->draining_health()}};
  // Tools whose inputSchema does not compile: their calls are not validated.
  if (!catalog_.schema_errors().empty()) {
    bj::array errors;
    for (const auto& e : catalog_.schema_errors()) errors.emplace_back(e);
    out["schema_errors"] = std::move(errors);
  }
  if (!surfaces_->empty()) {
    // What each surface shows now, so a run can record the fingerprint it saw.
    bj::object shown;
    for (const auto& view : surfaces_->views()) {
      shown[view->name()] =
          bj::object{{"fingerprint", view->fingerprint()}, {"tools", view->tools().size()}};
    }
    out["surfaces"] = std::move(shown);
  }
  return bj::serialize(out);
}

}  // namespace toolbridge::gateway
