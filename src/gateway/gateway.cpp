#include "gateway/gateway.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <filesystem>

#include "base/spawn.h"
#include "gateway/methods.h"
#include "gateway/reload.h"
#include "json/envelope.h"
#include "otel/exporter.h"
#include "policy/admission_stage.h"
#include "policy/breaker_stage.h"
#include "replay/cassette.h"
#include "replay/recorder.h"
#include "surfaces/registry.h"

namespace toolbridge::gateway {

namespace asio = boost::asio;
namespace bj = boost::json;
using namespace std::chrono_literals;

namespace {

constexpr auto kSweepInterval = 30s;

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string("localhost");
}

}  // namespace

Gateway::Gateway(asio::io_context& io, config::Config config, const base::Clock& clock)
    : io_(io),
      clock_(clock),
      config_(std::move(config)),
      call_log_(telemetry::CallLog::Limits{.max_bytes = config_.gateway.call_log_max_bytes}),
      gate_(config_.gateway.start_concurrency),
      sweep_(io, clock),
      settled_(io, clock) {
  sessions_.set_owner(config_.gateway.gateway_id);
  session_dir_root_ = config_.gateway.session_dir_root;
  if (session_dir_root_.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    session_dir_root_ = fmt::format("{}/toolbridge-{}", tmp && *tmp ? tmp : "/tmp", ::getpid());
  }
  setup_replay();
  for (const auto& configured : config_.servers) {
    config::Server s = configured;
    if (replay_only()) s.enabled = false;  // strict replay: answered from the cassette
    auto up =
        std::make_shared<upstream::Upstream>(io_, s, gate_, metrics_, session_dir_root_, clock_);
    up->on_catalog_changed = [this]() { rebuild_catalog(); };
    upstreams_.push_back(std::move(up));
  }
  // The writer thread starts with the gateway (serve() forks its watchdog before any thread).
  if (!config_.gateway.trace.file.empty())
    trace_ = std::make_unique<telemetry::CallTrace>(config_.gateway.trace, false);
  if (!config_.gateway.otel.endpoint.empty()) {
    otel::Resource resource{.service_name = config_.gateway.otel.service_name};
    resource.instance_id = config_.gateway.gateway_id.empty()
                               ? fmt::format("{}:{}", host_name(), ::getpid())
                               : config_.gateway.gateway_id;
    otel_ = std::make_unique<otel::Exporter>(config_.gateway.otel, std::move(resource), clock_);
  }
  if (replay_only()) {
    // The catalog is the cassette's: the tool lists its servers had when it was recorded.
    std::vector<catalog::Catalog::Source> sources;
    for (const auto& s : config_.servers) {
      auto it = cassette_->servers().find(s.name);
      if (it != cassette_->servers().end()) sources.push_back({s.name, &it->second.lists});
    }
    catalog_.rebuild(sources, config_.gateway.tool_naming, config_.gateway.separator);
  }
  surfaces_ = std::make_shared<const surfaces::Registry>(config_.surfaces, catalog_);
  pipeline_ = std::make_unique<Pipeline>(
      PipelineParts{io_, config_, catalog_, upstreams_, metrics_, stopping_, call_log_,
                    trace_.get(), clock_, otel_.get(), cassette_.get(), recorder_.get()});
  methods_ = std::make_unique<Methods>(*this);
  reloader_ = std::make_unique<Reloader>(*this);
  register_metrics();
}

Gateway::~Gateway() = default;

void Gateway::register_otel_metrics() {
  const std::string exported = "Spans the OpenTelemetry collector accepted (gateway.otel).";
  metrics_.gauge("toolbridge_otel_spans_exported_total", exported, [this](auto& out) {
    out.emplace_back("", static_cast<double>(otel_->stats().exported));
  });
  metrics_.describe("toolbridge_otel_spans_exported_total", "counter", exported);
  const std::string dropped =
      "Spans not exported, by reason: queue_full (the export queue was full: the collector is "
      "slow or down) or export_failed (their export request failed).";
  metrics_.gauge("toolbridge_otel_spans_dropped_total", dropped, [this](auto& out) {
    const auto s = otel_->stats();
    out.emplace_back(telemetry::labels({{"reason", "queue_full"}}),
                     static_cast<double>(s.dropped_queue));
    out.emplace_back(telemetry::labels({{"reason", "export_failed"}}),
                     static_cast<double>(s.dropped_export));
  });
  metrics_.describe("toolbridge_otel_spans_dropped_total", "counter", dropped);
  const std::string requests = "OTLP export requests, by result (ok, failed).";
  metrics_.gauge("toolbridge_otel_export_requests_total", requests, [this](auto& out) {
    const auto s = otel_->stats();
    out.emplace_back(telemetry::labels({{"result", "ok"}}),
                     static_cast<double>(s.requests - s.failed_requests));
    out.emplace_back(telemetry::labels({{"result", "failed"}}),
                     static_cast<double>(s.failed_requests));
  });
  metrics_.describe("toolbridge_otel_export_requests_total", "counter", requests);
}

void Gateway::setup_replay() {
  const config::Gateway& g = config_.gateway;
  if (!g.replay.path.empty()) {
    auto loaded = replay::Cassette::load(g.replay.path);
    if (!loaded) {
      replay_error_ = "replay: " + loaded.error();
      return;
    }
    cassette_ = std::move(*loaded);
    if (cassette_->torn_tail())
      spdlog::warn("replay: {}: the last record was cut short (a crash?) and is left out",
                   cassette_->dir());
    if (cassette_->damaged() > 0)
      spdlog::warn("replay: {}: {} damaged records left out", cassette_->dir(),
                   cassette_->damaged());
    spdlog::info("replay ({}): {} calls of {} trajectories from {}",
                 g.replay.mode == config::ReplayMode::kStrict ? "strict" : "fallthrough",
                 cassette_->calls().size(), cassette_->trajectories().size(), cassette_->dir());
  }
  config::Record record = g.record;
  // Fallthrough records what it runs live: beside the replayed run unless `record` says where.
  if (record.path.empty() && cassette_ && g.replay.mode == config::ReplayMode::kFallthrough)
    record.path = std::filesystem::path(cassette_->dir()).parent_path().string();
  if (record.path.empty()) return;
  recorder_ = std::make_unique<replay::Recorder>(record, metrics_, clock_);
  if (!recorder_->error().empty()) {
    replay_error_ = recorder_->error();
    recorder_.reset();
    return;
  }
  spdlog::info("record: writing {}", recorder_->run_dir());
}

bool Gateway::replay_only() const {
  return cassette_ && config_.gateway.replay.mode == config::ReplayMode::kStrict;
}

base::Status Gateway::start() {
  if (!replay_error_.empty()) return base::fail(replay_error_);
  if (recorder_) recorder_->start(io_.get_executor());
  if (otel_) otel_->start();
  if (trace_) {
    if (std::string err = trace_->error(); !err.empty()) return base::fail("trace: " + err);
    trace_->start_writer();
  }
  settle_by_ = clock_.now() + config_.gateway.ready_timeout;
  settled_.expires_at(settle_by_);
  first_starts_ = upstreams_.size();
  for (const auto& up : upstreams_) {
    asio::co_spawn(io_, up->start(), [this](std::exception_ptr e) {
      base::log_failure("server start")(e);
      if (--first_starts_ == 0) settled_.cancel();  // wakes every until_settled()
    });
  }
  expire_sessions();
  reloader_->update_watch();
  return {};
}

bool Gateway::settled() const {
  return first_starts_ == 0 || clock_.now() >= settle_by_;
}

asio::awaitable<void> Gateway::until_settled() {
  while (!settled()) {
    boost::system::error_code ec;
    co_await settled_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

void Gateway::begin_stop() {
  stopping_ = true;
  sweep_.cancel();
}

asio::awaitable<void> Gateway::drain() {
  const auto drain_until = clock_.now() + config_.gateway.shutdown_grace;
  // Waits for each server's calls in turn (those a reload retired too) until none holds one; a
  // count that rose meanwhile is waited for again. Woken by the last call's answer, no polling.
  for (;;) {
    std::vector<std::shared_ptr<upstream::Upstream>> servers = reloader_->draining();
    servers.insert(servers.end(), upstreams_.begin(), upstreams_.end());
    std::size_t holding = 0;
    std::shared_ptr<upstream::Upstream> busy;
    for (const auto& up : servers) {
      holding += up->holding_calls();
      if (!busy && up->holding_calls() > 0) busy = up;
    }
    if (!busy) co_return;
    if (clock_.now() >= drain_until) {
      spdlog::warn("shutdown: {} calls still in flight after shutdown_grace", holding);
      co_return;
    }
    co_await busy->holders().until_zero(drain_until);
  }
}

asio::awaitable<void> Gateway::stop_servers() {
  // A reload being applied finishes first; servers it retired stop now.
  co_await reloader_->stop();
  for (auto& [id, s] : sessions_) {
    if (s->get_stream) s->get_stream->close();
    s->fail_all_outbound("the gateway is shutting down");
  }
  sessions_.clear();
  // Stop all servers at once; each is bounded by its own stop ladder.
  std::size_t remaining = upstreams_.size();
  base::Timer all_done(io_, clock_);
  for (const auto& up : upstreams_) {
    asio::co_spawn(io_, up->stop(), [&](std::exception_ptr e) {
      base::log_failure("server stop")(e);
      if (--remaining == 0) all_done.cancel();
    });
  }
  boost::system::error_code ec;
  if (remaining > 0) co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  // Session directories went with their instances; the root goes too if nothing was kept.
  if (config_.gateway.session_dir_root.empty()) ::rmdir(session_dir_root_.c_str());
}

void Gateway::rebuild_catalog() {
  const std::size_t before = catalog_.tool_count();
  const std::uint64_t version = catalog_.version();
  catalog_.rebuild(upstreams_, config_.gateway.tool_naming, config_.gateway.separator);
  if (catalog_.version() != version) {
    spdlog::info("catalog: {} tools (was {})", catalog_.tool_count(), before);
    // The surfaces' views now, not at their next list: a fingerprint that moved is logged as
    // the catalog changes.
    if (surfaces_) surfaces_->views();
    broadcast(json::make_notification("notifications/tools/list_changed", {}));
  }
}

void Gateway::broadcast(const std::string& message) {
  for (auto& [id, s] : sessions_) {
    if (s->initialized) s->push_unsolicited(message);
  }
}

std::vector<std::shared_ptr<upstream::Upstream>> Gateway::every_version() const {
  std::vector<std::shared_ptr<upstream::Upstream>> all = upstreams_;
  for (auto& up : reloader_->draining()) all.push_back(std::move(up));
  return all;
}

std::size_t Gateway::release_session(const std::string& key) {
  std::size_t n = 0;
  // A session may still be bound to a version a reload replaced (per_session).
  for (const auto& up : every_version()) n += up->release(key);
  forget_trajectory(key);
  return n;
}

base::Status Gateway::claim_trajectory(const std::string& name, const std::string& owner) {
  // Names of trajectories whose instances are gone are forgotten by the sweep; a flood of new
  // names between two sweeps is bounded here.
  constexpr std::size_t kMaxTrajectories = 100'000;
  auto it = trajectory_owners_.find(name);
  if (it == trajectory_owners_.end()) {
    // Each trajectory may hold an instance of every per_session server: one client must not be
    // able to bind them all.
    const std::size_t cap = config_.gateway.max_trajectories_per_client;
    if (trajectories_of(owner) >= cap) forget_unbound_trajectories_now_and_then();
    if (trajectories_of(owner) >= cap) {
      return base::fail(fmt::format(
          "this client ({}) has {} trajectories in use (gateway.max_trajectories_per_client); "
          "release finished ones with DELETE /sessions/NAME or toolbridge/release",
          owner, cap));
    }
    if (trajectory_owners_.size() >= kMaxTrajectories) forget_unbound_trajectories_now_and_then();
    if (trajectory_owners_.size() >= kMaxTrajectories) {
      return base::fail(fmt::format("too many trajectories in use ({}); release finished ones",
                                    kMaxTrajectories));
    }
    trajectory_owners_.emplace(name, owner);
    ++owned_trajectories_[owner];
    return {};
  }
  if (it->second == owner) return {};
  return base::fail(fmt::format(
      "trajectory '{}' belongs to another client ({}); a trajectory is used and released by the "
      "client (address or X-Toolbridge-Tenant) that named it first",
      name, it->second.starts_with("tenant ") ? "another tenant" : "another address"));
}

base::Expected<std::size_t> Gateway::release_for(const std::string& name,
                                                 const std::string& owner) {
  std::string holder;
  if (auto session = sessions_.find(name)) {
    holder = session->owner;
  } else if (auto it = trajectory_owners_.find(name); it != trajectory_owners_.end()) {
    holder = it->second;
  }
  if (!holder.empty() && holder != owner) {
    return base::fail(fmt::format(
        "'{}' belongs to another client: only the address or X-Toolbridge-Tenant that opened the "
        "session or first named the trajectory may release it",
        name));
  }
  return release_session(name);
}

void Gateway::forget_unbound_trajectories() {
  std::vector<std::string> unbound;
  const auto servers = every_version();
  for (const auto& [name, owner] : trajectory_owners_) {
    const bool bound = std::any_of(servers.begin(), servers.end(),
                                   [&name](const auto& up) { return up->bound(name); });
    if (!bound) unbound.push_back(name);
  }
  for (const auto& name : unbound) forget_trajectory(name);
}

void Gateway::forget_unbound_trajectories_now_and_then() {
  // A client at its cap that keeps naming new trajectories must not make every call a scan.
  const auto now = clock_.now();
  if (now - last_forced_forget_ < 1s) return;
  last_forced_forget_ = now;
  forget_unbound_trajectories();
}

void Gateway::forget_trajectory(const std::string& name) {
  auto it = trajectory_owners_.find(name);
  if (it == trajectory_owners_.end()) return;
  auto count = owned_trajectories_.find(it->second);
  if (count != owned_trajectories_.end() && --count->second == 0) owned_trajectories_.erase(count);
  trajectory_owners_.erase(it);
}

std::size_t Gateway::trajectories_of(const std::string& owner) const {
  auto it = owned_trajectories_.find(owner);
  return it == owned_trajectories_.end() ? 0 : it->second;
}

void Gateway::expire_sessions() {
  // Often enough that a short session_idle_ttl is honoured within half of itself.
  const auto ttl =
      std::chrono::duration_cast<std::chrono::milliseconds>(config_.gateway.session_idle_ttl);
  sweep_.expires_after(std::clamp<std::chrono::milliseconds>(ttl / 2, 100ms, kSweepInterval));
  sweep_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopping_) return;
    const auto now = clock_.now();
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      const auto& s = it->second;
      if (s->idle() && now - s->last_seen > config_.gateway.session_idle_ttl) {
        spdlog::debug("session {} expired after being idle", it->first);
        s->fail_all_outbound("the session expired");
        const std::string id = it->first;
        it = sessions_.erase(it);
        release_session(id);
      } else {
        ++it;
      }
    }
    // Named trajectories outlive their connection (reward computation calls tools later) but
    // not the idle TTL.
    const auto cutoff = now - config_.gateway.session_idle_ttl;
    for (const auto& up : every_version()) {
      up->release_idle(cutoff, [this](const std::string& key) { return sessions_.contains(key); });
    }
    forget_unbound_trajectories();
    expire_sessions();
  });
}

base::Expected<std::shared_ptr<Session>> Gateway::create_session(const std::string& client) {
  if (stopping_) return base::fail("the gateway is shutting down");
  const auto& g = config_.gateway;
  if (sessions_.count_of(client) >= g.max_sessions_per_client && !evict_idle_session(&client)) {
    return base::fail(fmt::format(
        "too many sessions from {} (gateway.max_sessions_per_client = {}), none idle for "
        "gateway.session_reclaim_after ({} s); end sessions with DELETE /mcp or retry later",
        client, g.max_sessions_per_client, g.session_reclaim_after.count() / 1000));
  }
  if (sessions_.size() >= g.max_sessions && !evict_idle_session(nullptr)) {
    return base::fail(
        fmt::format("too many sessions (gateway.max_sessions = {}), none idle for "
                    "gateway.session_reclaim_after ({} s); retry later",
                    g.max_sessions, g.session_reclaim_after.count() / 1000));
  }
  auto session = sessions_.add(io_, client);
  session->last_seen = clock_.now();
  return session;
}

bool Gateway::evict_idle_session(const std::string* client) {
  const auto seen_before = clock_.now() - config_.gateway.session_reclaim_after;
  auto victim = sessions_.idle_longest(client, seen_before);
  if (!victim) return false;
  spdlog::info("session {} of {} closed to make room for a new one ({})", victim->id(),
               victim->client(),
               client ? "gateway.max_sessions_per_client" : "gateway.max_sessions");
  end_session(victim, "the session was closed to make room for a new one");
  return true;
}

std::shared_ptr<Session> Gateway::find_session(std::string_view id) const {
  return sessions_.find(id);
}

void Gateway::end_session(const std::shared_ptr<Session>& session, const std::string& why) {
  auto keep = session;  // the map may hold the last reference
  sessions_.erase(keep);
  // Calls still running for this session are cancelled upstream; nobody will read them.
  auto in_flight = std::move(keep->in_flight);
  keep->in_flight.clear();
  for (auto& [caller_id, f] : in_flight) {
    if (auto call = f.call.lock()) call->cancel(why);
  }
  release_session(keep->id());
  if (keep->get_stream) keep->get_stream->close();
  keep->fail_all_outbound(why);
}

std::shared_ptr<upstream::Upstream> Gateway::upstream(std::string_view name) const {
  for (const auto& up : upstreams_) {
    if (up->name() == name) return up;
  }
  return nullptr;
}

}  // namespace toolbridge::gateway
