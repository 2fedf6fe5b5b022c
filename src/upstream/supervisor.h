#pragma once
// Keeps a server's members running: bounded concurrent starts, restarts after a crash (with
// backoff), warm spares, and recycling by call count, age, resident memory and idleness. Where
// a call goes is not decided here (see placement.h); the owner hears about members through
// SupervisorCallbacks. Decisions read the time from a base::Clock; Asio timers only schedule.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/jitter.h"
#include "config/config.h"
#include "telemetry/metrics.h"
#include "upstream/backoff.h"
#include "upstream/instance.h"
#include "upstream/member.h"
#include "upstream/recycle.h"
#include "upstream/session_dir.h"
#include "upstream/start_gate.h"

namespace toolbridge::upstream {

// What the supervisor tells its owner. Calls come from the io_context's thread.
class SupervisorCallbacks {
 public:
  virtual ~SupervisorCallbacks() = default;
  // `m`, started for the session `m.key`, never became ready: that session starts over.
  virtual void start_failed(const Member& m) = 0;
  // `m`, bound to the session `m.key`, is gone or going: the session's calls say `why`.
  virtual void member_lost(const Member& m, const std::string& why) = 0;
  // A member became ready, exited or was removed: waiting calls look again.
  virtual void members_changed() = 0;
  // The catalog changed (first start, a restart, list_changed).
  virtual void catalog_changed() = 0;
};

class Supervisor : public std::enable_shared_from_this<Supervisor> {
 public:
  using time_point = base::Clock::time_point;

  // `session_dir_root`: where ${session.dir} directories are made (created on first use).
  Supervisor(boost::asio::io_context& io, config::Server server, StartGate& gate,
             telemetry::Metrics& metrics, std::string session_dir_root, const base::Clock& clock,
             base::RandomSource& random);
  // Null detaches the owner (it is going away while starts or stops are still running).
  void set_callbacks(SupervisorCallbacks* callbacks) { callbacks_ = callbacks; }

  // Starts a member (bound to `key` when per_session and not empty); it is `kStarting` at once.
  std::shared_ptr<Member> launch(const std::string& key);
  // Starts what the policy keeps running (shared instance, pool minimum, spares), unless
  // backing off, in which case it comes back when the wait is over.
  void maintain();
  // Ticks once a second while something is recycled by time or memory.
  void arm_tick();
  // Recycles by age, resident memory and idleness at `clock.now()`.
  void tick();
  // A call goes to `m`: counted for recycling by max_calls.
  std::shared_ptr<Instance> use(const std::shared_ptr<Member>& m);
  // Takes no new calls; stopped once its calls in flight finish.
  void retire(const std::shared_ptr<Member>& m, const std::string& reason);
  void stop_member(const std::shared_ptr<Member>& m, bool remove_dir);
  // per_session: spares are topped up a moment after one was bound (see kRefillDelay).
  void refill_soon();
  // A call arrived for a shared server stopped for idleness.
  void wake_from_dormant();
  boost::asio::awaitable<void> stop();
  // A reload replaced this version (Upstream::keep_bound_only): nothing new starts; members no
  // session is bound to stop now.
  void keep_bound_only();
  void remove_dir(const std::string& dir) const { dirs_.remove(dir); }

  const config::Server& config() const { return server_; }
  const base::Clock& clock() const { return clock_; }
  const std::vector<std::shared_ptr<Member>>& members() const { return members_; }
  std::size_t live() const;      // members that are neither retiring nor gone
  std::size_t starting() const;  // live members not ready yet
  bool stopped() const { return stopped_; }
  bool failing() const { return failing_; }
  bool dormant() const { return dormant_; }
  bool backing_off() const { return backoff_.ever_scheduled() && backoff_.waiting(clock_.now()); }
  time_point retry_at() const { return backoff_.retry_at(); }
  // False when each per_session instance is made for its session (args use ${session.id}).
  bool spares_serve_sessions() const { return !uses_id_; }
  const std::string& last_error() const { return last_error_; }
  std::uint64_t restarts() const { return restarts_; }
  const std::map<std::string, std::uint64_t>& recycles() const { return recycles_; }
  const Catalog* catalog() const { return catalog_.get(); }

 private:
  boost::asio::awaitable<void> run_start(std::shared_ptr<Member> m);
  void became_ready(const std::shared_ptr<Member>& m);
  // A server announced list_changed: one instance re-reads for the whole server.
  void relist();
  void start_failed(const std::shared_ptr<Member>& m, const std::string& error);
  void on_member_exit(const std::shared_ptr<Member>& m, const std::string& reason);
  void erase_member(const std::shared_ptr<Member>& m);
  void abandon_start(const std::shared_ptr<Member>& m);
  std::size_t wanted_members() const;
  void recycle_idle(time_point now);
  MemberUse use_of(const Member& m) const;
  void tell_members_changed() const;
  void tell_catalog_changed() const;

  boost::asio::io_context& io_;
  config::Server server_;
  StartGate& gate_;
  telemetry::Metrics& metrics_;
  SessionDirs dirs_;
  const base::Clock& clock_;
  SupervisorCallbacks* callbacks_ = nullptr;
  Backoff backoff_;
  Recycling recycling_;
  bool uses_dir_ = false;  // per_session config mentions ${session.dir}
  bool uses_id_ = false;   // ... or ${session.id}: no spares, each instance made for its session
  bool stopped_ = false;
  bool bound_only_ = false;  // keep_bound_only(): a reload replaced this version
  bool dormant_ = false;  // shared with idle_ttl: stopped while idle, started by the next call
  bool failing_ = false;  // the last start failed or crashed early; cleared by a ready instance
  std::vector<std::shared_ptr<Member>> members_;
  std::shared_ptr<const Catalog> catalog_;
  std::string last_error_;
  std::uint64_t restarts_ = 0;
  std::uint64_t instances_started_ = 0;
  std::size_t pending_restarts_ = 0;  // launches owed to instances that failed or died
  base::Timer retry_timer_;
  bool retry_armed_ = false;
  base::Timer refill_timer_;
  bool refill_armed_ = false;
  base::Timer tick_timer_;
  bool ticking_ = false;
  time_point next_rss_check_{};
  std::map<std::string, std::uint64_t> recycles_;
};

}  // namespace toolbridge::upstream
