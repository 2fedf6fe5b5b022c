#pragma once
// The gateway's core: the supervised servers, the aggregated catalog, the call pipeline and the
// downstream sessions (trajectories). Front ends (src/frontend) own the listener and turn HTTP
// into sessions, messages and Calls; everything they run goes through here.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "catalog/catalog.h"
#include "config/config.h"
#include "gateway/pipeline.h"
#include "gateway/session.h"
#include "gateway/session_table.h"
#include "telemetry/call_log.h"
#include "telemetry/call_trace.h"
#include "telemetry/metrics.h"
#include "upstream/upstream.h"

namespace toolbridge::otel {
class Exporter;
}
namespace toolbridge::replay {
class Cassette;
class Recorder;
}  // namespace toolbridge::replay
namespace toolbridge::surfaces {
class Registry;
}

namespace toolbridge::gateway {

class Methods;
class Reloader;

class Gateway {
 public:
  // Every clock read and timer of the gateway and its front ends goes through `clock` (unit
  // tests pass a base::ManualClock).
  Gateway(boost::asio::io_context& io, config::Config config,
          const base::Clock& clock = base::steady_clock());
  ~Gateway();

  // Starts every server concurrently (bounded by start_concurrency) and the session sweep, or
  // says why it cannot (the trace file cannot be opened).
  base::Status start();
  // Refuses new sessions and calls from now on.
  void begin_stop();
  // Waits up to shutdown_grace for calls in flight to finish (their answers still go out).
  boost::asio::awaitable<void> drain();
  // Ends every session and stops every server with its stop ladder.
  boost::asio::awaitable<void> stop_servers();
  bool stopping() const { return stopping_; }
  // Start-up is over: every server's first start has finished (ready or failed), or
  // gateway.ready_timeout has passed since start().
  bool settled() const;
  // Returns once settled().
  boost::asio::awaitable<void> until_settled();

  boost::asio::io_context& io() { return io_; }
  const base::Clock& clock() const { return clock_; }
  const config::Config& config() const { return config_; }
  const catalog::Catalog& catalog() const { return catalog_; }
  // The tool surfaces (`surfaces`) and their views over the catalog; held whole, for a reload.
  const surfaces::Registry& surfaces() const { return *surfaces_; }
  const Pipeline& pipeline() const { return *pipeline_; }
  Methods& methods() { return *methods_; }
  // The configured server `name` (its instances), or null.
  std::shared_ptr<upstream::Upstream> upstream(std::string_view name) const;
  telemetry::Metrics& metrics() { return metrics_; }
  std::string health_json() const;
  // Live reload of the config file (gateway/reload.h, docs/reload.md).
  Reloader& reloader() { return *reloader_; }
  // Every call's record while it runs and after (trajectory view, dashboard).
  const telemetry::CallLog& call_log() const { return call_log_; }
  // The call trace file, null when `trace` is not configured.
  const telemetry::CallTrace* trace() const { return trace_.get(); }
  // The span exporter, null when `otel` is not configured.
  otel::Exporter* otel() const { return otel_.get(); }

  // Sessions (trajectories). A new session for `client` (its IP address), or why not (shutting
  // down; max_sessions or max_sessions_per_client reached with every session busy: otherwise the
  // longest-idle one is closed to make room).
  base::Expected<std::shared_ptr<Session>> create_session(const std::string& client);
  std::shared_ptr<Session> find_session(std::string_view id) const;
  // Cancels the session's calls upstream, closes its stream, forgets it (DELETE, legacy close).
  void end_session(const std::shared_ptr<Session>& session, const std::string& why);
  // Frees the per_session instances bound to `key` on every server; returns how many.
  std::size_t release_session(const std::string& key);
  // Trajectory ownership: the first owner (Session::owner) to name a trajectory holds it while
  // any server keeps an instance bound to it. Success if `owner` may use `name`, else why not.
  base::Status claim_trajectory(const std::string& name, const std::string& owner);
  // Releases `name` (a trajectory, or an MCP session id) for `owner`: the number of instances
  // released, or the refusal unless `owner` owns it.
  base::Expected<std::size_t> release_for(const std::string& name, const std::string& owner);

 private:
  friend class Reloader;  // swaps the config, the servers and the surfaces
  void rebuild_catalog();
  // The servers serving and the versions a reload retired that have not stopped yet.
  std::vector<std::shared_ptr<upstream::Upstream>> every_version() const;
  void broadcast(const std::string& message);
  void expire_sessions();
  // Closes the session (of `client` if given) idle for at least gateway.session_reclaim_after
  // that was seen longest ago; false if none has been idle that long.
  bool evict_idle_session(const std::string* client);
  // Forgets owners of trajectories no server has an instance bound to any more.
  void forget_unbound_trajectories();
  void forget_unbound_trajectories_now_and_then();  // at most once a second
  void forget_trajectory(const std::string& name);
  std::size_t trajectories_of(const std::string& owner) const;
  void register_metrics();
  void register_otel_metrics();
  // Loads gateway.replay's cassette and opens gateway.record's run (an error goes to start()).
  void setup_replay();
  // Strict replay: the catalog is the cassette's recorded lists; no server is started.
  bool replay_only() const;

  boost::asio::io_context& io_;
  const base::Clock& clock_;
  config::Config config_;
  telemetry::Metrics metrics_;
  telemetry::CallLog call_log_;
  std::unique_ptr<telemetry::CallTrace> trace_;
  std::unique_ptr<otel::Exporter> otel_;
  std::unique_ptr<replay::Cassette> cassette_;
  std::unique_ptr<replay::Recorder> recorder_;
  std::string replay_error_;  // why the cassette or the recording could not be opened
  upstream::StartGate gate_;
  std::vector<std::shared_ptr<upstream::Upstream>> upstreams_;
  catalog::Catalog catalog_;
  std::shared_ptr<const surfaces::Registry> surfaces_;
  bool stopping_ = false;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<Methods> methods_;
  SessionTable sessions_;
  std::unordered_map<std::string, std::string> trajectory_owners_;   // name -> owner
  std::unordered_map<std::string, std::size_t> owned_trajectories_;  // owner -> names
  base::Clock::time_point last_forced_forget_{};
  base::Timer sweep_;
  std::size_t first_starts_ = 0;  // servers whose first start has not finished
  base::Timer settled_;           // expires at ready_timeout; cancelled when settled
  base::Clock::time_point settle_by_{};
  std::string session_dir_root_;  // per_session servers' ${session.dir} directories go here
  std::unique_ptr<Reloader> reloader_;
};

}  // namespace toolbridge::gateway
