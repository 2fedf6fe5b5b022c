#pragma once
// A configured server and its instances. The sharing policy decides where a call goes:
// `shared` multiplexes one instance, `pool` keeps min..max instances and picks the least busy,
// `per_session` binds one instance to each session (trajectory) for the session's lifetime.
// Supervision: bounded concurrent starts, restarts after a crash (backoff with jitter), warm
// spares, and recycling by call count, age, resident memory and idleness.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "config/config.h"
#include "telemetry/metrics.h"
#include "upstream/instance.h"

namespace toolbridge::upstream {

// Caps how many instances initialise at once (start-up storms hurt every server on a 2-core box,
// and a burst of 500 new sessions must not fork 500 processes at once).
class StartGate {
 public:
  StartGate(boost::asio::io_context& io, std::size_t limit) : io_(io), free_(limit ? limit : 1) {}
  boost::asio::awaitable<void> acquire();
  void release();

 private:
  boost::asio::io_context& io_;
  std::size_t free_;
  std::deque<std::shared_ptr<boost::asio::steady_timer>> waiters_;
};

// `server` with ${session.id} and ${session.dir} substituted in args, env values and cwd.
config::Server for_session(const config::Server& server, std::string_view id, std::string_view dir);

class Upstream : public std::enable_shared_from_this<Upstream> {
 public:
  using Clock = Instance::Clock;
  enum class State { kStarting, kReady, kBackoff, kDisabled, kStopped };

  // `session_dir_root`: where ${session.dir} directories are made (created on first use).
  Upstream(boost::asio::io_context& io, config::Server server, StartGate& gate,
           telemetry::Metrics& metrics, std::string session_dir_root = {});

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
  // pick(), waiting until `deadline` for an instance when pick() says wait.
  boost::asio::awaitable<Pick> checkout(std::string key, Clock::time_point deadline);

  // per_session: ends the binding of `key` at once: stops its instance (calls in flight fail)
  // and removes its directory. Returns the number of instances released (0 or 1).
  std::size_t release(const std::string& key);
  // per_session: releases bindings unused since `cutoff` with no call in flight, unless `keep`.
  void release_idle(Clock::time_point cutoff, const std::function<bool(const std::string&)>& keep);

  const config::Server& config() const { return server_; }
  const std::string& name() const { return server_.name; }
  State state() const;
  const std::string& last_error() const { return last_error_; }
  std::uint64_t restarts() const { return restarts_; }
  // Seconds until the next start attempt while in backoff.
  double retry_in_seconds() const;
  std::string describe_unavailable() const;
  // The catalog of the first ready instance, kept while no instance runs; null before that.
  const Catalog* catalog() const { return catalog_.get(); }
  std::size_t in_flight() const;
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
  const std::map<std::string, std::uint64_t>& recycles() const { return recycles_; }

  // Called after the catalog changed (first start, a restart, list_changed).
  std::function<void()> on_catalog_changed;

 private:
  struct Member {
    std::shared_ptr<Instance> inst;
    std::string key;  // per_session: the session it serves; empty while it is a spare
    std::string dir;  // its ${session.dir}; empty when the config does not use one
    bool ready = false;
    bool retiring = false;  // takes no new calls; stopped once its calls in flight finish
    bool stopping = false;
    bool exited = false;
    Clock::time_point ready_at{};
    Clock::time_point last_used{};
    std::uint64_t calls = 0;
  };
  struct Binding {
    std::shared_ptr<Member> member;
    std::string lost;  // why the session's instance is gone; its calls say so
    Clock::time_point last_used{};
  };

  std::shared_ptr<Member> launch(const std::string& key);
  boost::asio::awaitable<void> run_start(std::shared_ptr<Member> m);
  void start_failed(const std::shared_ptr<Member>& m, const std::string& error);
  void on_member_exit(const std::shared_ptr<Member>& m, const std::string& reason);
  void retire(const std::shared_ptr<Member>& m, const std::string& reason);
  void stop_member(const std::shared_ptr<Member>& m, bool remove_dir);
  void erase_member(const std::shared_ptr<Member>& m);
  std::shared_ptr<Instance> use(const std::shared_ptr<Member>& m);
  void maintain();
  void arm_tick();
  void tick();
  void wake_waiters();
  std::size_t live() const;      // members that are neither retiring nor gone
  std::size_t starting() const;  // live members not ready yet
  std::chrono::milliseconds backoff_delay();
  std::string make_dir(std::uint64_t number, std::string& error);
  void remove_dir(const std::string& dir) const;
  std::string checkout_timeout_message(const std::string& key) const;

  boost::asio::io_context& io_;
  config::Server server_;
  StartGate& gate_;
  telemetry::Metrics& metrics_;
  std::string session_dir_root_;
  bool uses_dir_ = false;  // per_session config mentions ${session.dir}
  bool uses_id_ = false;   // ... or ${session.id}: no spares, each instance made for its session
  bool stopped_ = false;
  std::vector<std::shared_ptr<Member>> members_;
  std::unordered_map<std::string, Binding> bindings_;
  std::unordered_set<std::string> awaiting_spare_;  // new sessions waiting for a starting spare
  std::deque<std::shared_ptr<boost::asio::steady_timer>> waiters_;
  std::shared_ptr<const Catalog> catalog_;
  bool dormant_ = false;  // shared with idle_ttl: stopped while idle, started by the next call
  bool failing_ = false;  // the last start failed or crashed early; cleared by a ready instance
  std::string last_error_;
  std::uint64_t restarts_ = 0;
  std::uint64_t instances_started_ = 0;
  std::size_t pending_restarts_ = 0;  // launches owed to instances that failed or died
  int consecutive_failures_ = 0;
  Clock::time_point retry_at_{};
  boost::asio::steady_timer retry_timer_;
  bool retry_armed_ = false;
  boost::asio::steady_timer refill_timer_;  // per_session: spares topped up after a bind
  bool refill_armed_ = false;
  boost::asio::steady_timer tick_timer_;
  bool ticking_ = false;
  Clock::time_point next_rss_check_{};
  std::map<std::string, std::uint64_t> recycles_;
};

std::string_view to_string(Upstream::State s);

}  // namespace toolbridge::upstream
