#pragma once
// A configured server and its instances. The sharing policy decides where a call goes:
// `shared` multiplexes one instance, `pool` keeps min..max instances and picks the least busy,
// `per_session` binds one instance to each session (trajectory) for the session's lifetime.
// Where a call goes is a Placement (placement.h); keeping instances running (starts, restarts
// with backoff, spares, recycling) is the Supervisor's (supervisor.h); this class binds
// sessions to instances and answers for the server as a whole.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "base/in_flight.h"
#include "base/jitter.h"
#include "config/config.h"
#include "telemetry/metrics.h"
#include "upstream/instance.h"
#include "upstream/member.h"
#include "upstream/placement.h"
#include "upstream/supervisor.h"

namespace toolbridge::upstream {

// Ends a wait of Upstream::checkout() or until_started() early. The waiter hands it to whoever may
// call off the wait (a call's cancel), which calls stop(): the wait returns at once.
class WaitStop {
 public:
  void stop() {
    stopped_ = true;
    if (auto t = timer_.lock()) t->cancel();
  }
  bool stopped() const { return stopped_; }

 private:
  friend class Upstream;
  bool stopped_ = false;
  std::weak_ptr<base::Timer> timer_;  // the wait's timer while it waits
};

class Upstream : public std::enable_shared_from_this<Upstream>, private SupervisorCallbacks {
 public:
  using Clock = Instance::Clock;
  enum class State { kStarting, kReady, kBackoff, kDisabled, kStopped };

  // `session_dir_root`: where ${session.dir} directories are made (created on first use).
  // `clock` and `random` decide backoff, recycling and idle expiry (tests pass manual ones).
  Upstream(boost::asio::io_context& io, config::Server server, StartGate& gate,
           telemetry::Metrics& metrics, std::string session_dir_root = {},
           const base::Clock& clock = base::steady_clock(),
           base::RandomSource& random = base::process_random());
  ~Upstream() override;

  // Starts what the policy keeps running (the shared instance, pool minimum, spares; one
  // instance to read the catalog for per_session). Returns once the first start has finished.
  boost::asio::awaitable<void> start();
  boost::asio::awaitable<void> stop();

  // Where a call goes: `instance` to send it now; else `error` says why it cannot go anywhere,
  // unless `wait` (an instance is starting for it, or a busy pool is growing): see checkout().
  struct Pick {
    std::shared_ptr<Instance> instance;
    std::string error;
    bool wait = false;
  };
  // `key` is the session (trajectory) the call belongs to; only per_session uses it.
  Pick pick(const std::string& key);
  // pick(), waiting until `deadline` for an instance when pick() says wait, or until `stop` (if
  // given) is stopped: then no instance, no error.
  boost::asio::awaitable<Pick> checkout(std::string key, Clock::time_point deadline,
                                        WaitStop* stop = nullptr);

  // While the server is starting and has never listed its tools: waits until it is ready, its
  // start failed, or `deadline`. Calls to its tools that arrive during start-up wait here.
  boost::asio::awaitable<void> until_started(Clock::time_point deadline, WaitStop* stop = nullptr);
  // Waits once until the server's instances change (one is ready, lost or stopped; its catalog
  // is read), `deadline`, or `stop`: for a caller that cannot use what pick() gives now (a retry
  // while the server restarts) to try again when trying can give something else.
  boost::asio::awaitable<void> until_changed(Clock::time_point deadline, WaitStop* stop = nullptr);

  // per_session: ends the binding of `key` at once: stops its instance (calls in flight fail)
  // and removes its directory. Returns the number of instances released (0 or 1).
  std::size_t release(const std::string& key);
  // per_session: an instance is bound to `key`.
  bool bound(const std::string& key) const { return bindings_.contains(key); }
  // per_session: the sessions bound to an instance (each binding holds a token). A reload's
  // retirement of an old version waits for it to reach zero.
  base::InFlight& sessions() { return sessions_; }
  // A reload replaced this version: it starts no spare or instance for a new session any more
  // and stops the spares it has; the instances bound to sessions serve them until released.
  void keep_bound_only();
  // per_session: releases bindings unused since `cutoff` with no call in flight, unless `keep`.
  void release_idle(Clock::time_point cutoff, const std::function<bool(const std::string&)>& keep);

  const config::Server& config() const { return supervisor_->config(); }
  const std::string& name() const { return config().name; }
  State state() const;
  const std::string& last_error() const { return supervisor_->last_error(); }
  std::uint64_t restarts() const { return supervisor_->restarts(); }
  // Seconds until the next start attempt while in backoff.
  double retry_in_seconds() const;
  std::string describe_unavailable() const;
  // The catalog of the first ready instance, kept while no instance runs; null before that.
  const Catalog* catalog() const { return supervisor_->catalog(); }
  std::size_t in_flight() const;
  // The calls routed here, from the resolve stage to their answer (call::Call holds a token):
  // those in flight on an instance and those still waiting (admission, an instance). A drain
  // waits for it to reach zero.
  base::InFlight& holders() { return holders_; }
  std::size_t holding_calls() const { return holders_.count(); }
  // The least recently started ready instance (pid and protocol version for /healthz), or null.
  std::shared_ptr<Instance> any_ready() const;

  struct Census {
    std::size_t starting = 0, idle = 0, busy = 0, retiring = 0;
    std::size_t spares = 0;    // ready and waiting for a session (per_session) or a call (pool)
    std::size_t sessions = 0;  // sessions bound (per_session)
  };
  Census census() const;
  std::vector<pid_t> pids() const;
  // Instances retired on purpose, by reason: max_calls, max_age, max_rss, idle.
  const std::map<std::string, std::uint64_t>& recycles() const { return supervisor_->recycles(); }

  // Called after the catalog changed (first start, a restart, list_changed).
  std::function<void()> on_catalog_changed;

 private:
  struct Binding {
    std::shared_ptr<Member> member;
    std::string lost;  // why the session's instance is gone; its calls say so
    Clock::time_point last_used{};
    base::InFlight::Token counted;  // in sessions_ while the binding lives
  };

  Pick pick_shared(const std::string& key);
  Pick pick_per_session(const std::string& key);
  Pick pick_bound(std::unordered_map<std::string, Binding>::iterator it);
  Pick bind(const std::string& key, const std::shared_ptr<Member>& m);
  void wake_waiters();
  std::string checkout_timeout_message(const std::string& key) const;

  // SupervisorCallbacks
  void start_failed(const Member& m) override;
  void member_lost(const Member& m, const std::string& why) override;
  void members_changed() override { wake_waiters(); }
  void catalog_changed() override;

  boost::asio::io_context& io_;
  const base::Clock& clock_;
  base::InFlight holders_{clock_};
  base::InFlight sessions_{clock_};
  std::shared_ptr<Supervisor> supervisor_;
  std::unique_ptr<Placement> placement_;
  std::vector<Candidate> candidates_;  // reused by pick(): no allocation per call
  std::unordered_map<std::string, Binding> bindings_;
  std::unordered_set<std::string> awaiting_spare_;  // new sessions waiting for a starting spare
  std::deque<std::shared_ptr<base::Timer>> waiters_;
};

std::string_view to_string(Upstream::State s);

}  // namespace toolbridge::upstream
