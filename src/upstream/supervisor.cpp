#include "upstream/supervisor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "base/spawn.h"
#include "process/child.h"

namespace toolbridge::upstream {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using config::Policy;

namespace {
// An instance that dies sooner than this after becoming ready counts as a failed start, so a
// server that crashes right after start backs off instead of restarting in a tight loop.
constexpr auto kStableAfter = 10s;
constexpr auto kTickInterval = 1s;
// The replacement of a bound spare starts a moment later: a process start takes milliseconds of
// CPU, which on a small machine would land on the session's first call.
constexpr auto kRefillDelay = 50ms;

RecycleLimits recycle_limits(const config::Server& s) {
  RecycleLimits l;
  l.max_calls = s.max_calls;
  l.max_age = s.max_age;
  l.idle_ttl = s.effective_idle_ttl();
  l.min_members = s.min_instances;
  l.spares = s.effective_spares();
  return l;
}
}  // namespace

Supervisor::Supervisor(asio::io_context& io, config::Server server, StartGate& gate,
                       telemetry::Metrics& metrics, std::string session_dir_root,
                       const base::Clock& clock, base::RandomSource& random)
    : io_(io),
      server_(std::move(server)),
      gate_(gate),
      metrics_(metrics),
      dirs_(std::move(session_dir_root), server_.name, server_.keep_session_dir),
      clock_(clock),
      backoff_(server_.restart_backoff_initial, server_.restart_backoff_max, random),
      recycling_(recycle_limits(server_)),
      retry_timer_(io, clock),
      refill_timer_(io, clock),
      tick_timer_(io, clock) {
  uses_dir_ = server_.policy == Policy::kPerSession && server_.uses_session_var("${session.dir}");
  uses_id_ = server_.policy == Policy::kPerSession && server_.uses_session_var("${session.id}");
  // Counters exist from the start, so a dashboard sees 0 rather than no series.
  const std::string labels = telemetry::labels({{"server", server_.name}});
  metrics_.add("toolbridge_restarts_total", labels, 0);
  metrics_.add("toolbridge_start_failures_total", labels, 0);
  metrics_.add("toolbridge_upstream_invalid_lines_total", labels, 0);
  for (const char* reason : {"max_calls", "max_age", "max_rss", "idle"}) {
    metrics_.add("toolbridge_recycles_total",
                 telemetry::labels({{"server", server_.name}, {"reason", reason}}), 0);
  }
}

std::size_t Supervisor::live() const {
  return static_cast<std::size_t>(
      std::count_if(members_.begin(), members_.end(), [](const auto& m) { return m->live(); }));
}

std::size_t Supervisor::starting() const {
  return static_cast<std::size_t>(
      std::count_if(members_.begin(), members_.end(), [](const auto& m) { return m->starting(); }));
}

void Supervisor::tell_members_changed() const {
  if (callbacks_) callbacks_->members_changed();
}

void Supervisor::tell_catalog_changed() const {
  if (callbacks_) callbacks_->catalog_changed();
}

MemberUse Supervisor::use_of(const Member& m) const {
  return MemberUse{m.ready(), m.ready_at, m.last_used, m.calls, m.inst->in_flight()};
}

// ---------------------------------------------------------------------------------------------
// Starting

std::shared_ptr<Member> Supervisor::launch(const std::string& key) {
  auto m = std::make_shared<Member>();
  m->key = key;
  const std::uint64_t number = ++instances_started_;
  if (pending_restarts_ > 0) {
    --pending_restarts_;
    ++restarts_;
    metrics_.add("toolbridge_restarts_total", telemetry::labels({{"server", server_.name}}));
  }
  std::string dir_error;
  if (uses_dir_) {
    base::Expected<std::string> dir = dirs_.make(number);
    if (dir)
      m->dir = std::move(*dir);
    else
      dir_error = dir.error();
  }
  const std::string_view session = key.empty() ? std::string_view("toolbridge-catalog") : key;
  config::Server config =
      server_.policy == Policy::kPerSession ? for_session(server_, session, m->dir) : server_;
  m->inst = std::make_shared<Instance>(io_, std::move(config), number, clock_);
  members_.push_back(m);
  asio::co_spawn(
      io_,
      [self = shared_from_this(), m, dir_error]() -> asio::awaitable<void> {
        if (!dir_error.empty()) {
          // Reported like any failed start, so it backs off rather than retrying at once.
          self->start_failed(m, dir_error);
          co_return;
        }
        co_await self->run_start(m);
      },
      base::log_failure("instance start"));
  return m;
}

void Supervisor::abandon_start(const std::shared_ptr<Member>& m) {
  erase_member(m);
  remove_dir(m->dir);
  tell_members_changed();
}

asio::awaitable<void> Supervisor::run_start(std::shared_ptr<Member> m) {
  auto self = shared_from_this();
  co_await gate_.acquire();
  if (stopped_ || !m->live()) {
    // Released or shut down while it waited for its turn.
    gate_.release();
    abandon_start(m);
    co_return;
  }
  std::weak_ptr<Supervisor> weak = self;
  m->inst->on_invalid_line = [weak]() {
    if (auto sup = weak.lock()) {
      sup->metrics_.add("toolbridge_upstream_invalid_lines_total",
                        telemetry::labels({{"server", sup->server_.name}}));
    }
  };
  const auto began = clock_.now();
  const base::Status started = co_await m->inst->start();
  gate_.release();
  if (stopped_ || !m->live()) {
    co_await m->inst->stop();
    abandon_start(m);
    co_return;
  }
  if (!started) {
    start_failed(m, started.error());
    co_return;
  }
  const auto now = clock_.now();
  m->state = MemberState::kReady;
  m->ready_at = now;
  m->last_used = now;
  failing_ = false;
  const double secs = std::chrono::duration<double>(now - began).count();
  const Catalog& catalog = m->inst->catalog();
  spdlog::info("[{}#{}] ready in {:.0f} ms: protocol {}, {} tools, {} resources, {} prompts",
               server_.name, m->inst->number(), secs * 1000, mcp::to_string(m->inst->version()),
               catalog.tools.size(), catalog.resources.size(), catalog.prompts.size());
  became_ready(m);
}

void Supervisor::became_ready(const std::shared_ptr<Member>& m) {
  std::weak_ptr<Supervisor> weak = shared_from_this();
  std::weak_ptr<Member> weak_member = m;
  m->inst->on_exit = [weak, weak_member](const std::string& reason) {
    auto sup = weak.lock();
    auto member = weak_member.lock();
    if (sup && member) sup->on_member_exit(member, reason);
  };
  m->inst->on_catalog_changed = [weak, weak_member]() {
    auto sup = weak.lock();
    auto member = weak_member.lock();
    if (!sup || !member) return;
    sup->catalog_ = std::make_shared<const Catalog>(member->inst->catalog());
    sup->tell_catalog_changed();
  };
  m->inst->on_list_changed = [weak]() {
    if (auto sup = weak.lock()) sup->relist();
  };
  // Instances of one server list the same catalog; per_session reads it once, not per session.
  if (!catalog_ || server_.policy != Policy::kPerSession) {
    catalog_ = std::make_shared<const Catalog>(m->inst->catalog());
    tell_catalog_changed();
  }
  if (uses_id_ && m->key.empty()) {
    // It ran only to read the catalog: an instance made for no session cannot serve one.
    stop_member(m, true);
    return;
  }
  tell_members_changed();
  maintain();
}

void Supervisor::keep_bound_only() {
  // A spare still starting may have a session's call waiting for it (the call was routed here
  // before the reload): it stays, and stops with this version.
  bound_only_ = true;
  std::vector<std::shared_ptr<Member>> spares;
  for (const auto& m : members_) {
    if (m->key.empty() && m->ready()) spares.push_back(m);
  }
  for (const auto& m : spares) stop_member(m, true);
}

void Supervisor::relist() {
  // One re-read at a time for the whole server, whichever instance announced the change: the
  // catalog is the server's, and each instance of a pool would otherwise re-read it on its own.
  // The instance already re-reading takes the request (as one more round); else the first ready.
  std::shared_ptr<Member> pick;
  for (const auto& m : members_) {
    if (m->state != MemberState::kReady) continue;
    if (m->inst->relisting()) {
      pick = m;
      break;
    }
    if (!pick) pick = m;
  }
  if (pick) pick->inst->relist();
}

void Supervisor::start_failed(const std::shared_ptr<Member>& m, const std::string& error) {
  erase_member(m);
  remove_dir(m->dir);
  m->state = MemberState::kExited;
  last_error_ = error;
  failing_ = true;
  ++pending_restarts_;
  backoff_.failed(clock_.now());
  spdlog::error("[{}] failed to start: {}", server_.name, error);
  metrics_.add("toolbridge_start_failures_total", telemetry::labels({{"server", server_.name}}));
  // A session waiting for this instance starts over (and hears about the failure).
  if (!m->key.empty() && callbacks_) callbacks_->start_failed(*m);
  tell_members_changed();
  maintain();
}

// ---------------------------------------------------------------------------------------------
// Exits, retiring and stopping

void Supervisor::erase_member(const std::shared_ptr<Member>& m) {
  std::erase(members_, m);
}

void Supervisor::on_member_exit(const std::shared_ptr<Member>& m, const std::string& reason) {
  const bool was_retiring = !m->live();
  m->state = MemberState::kExited;
  erase_member(m);
  if (stopped_) return;
  tell_members_changed();
  if (was_retiring) {
    // It died while draining; nothing more is owed to it.
    if (m->key.empty()) remove_dir(m->dir);
    maintain();
    return;
  }
  last_error_ = reason;
  if (!m->key.empty()) {
    // Strict affinity: the session's state died with its instance; its next call says so.
    // One session's instance dying (its agent ran something fatal) says nothing about the
    // others, so it does not count towards backoff.
    if (callbacks_) callbacks_->member_lost(*m, reason);
    maintain();
    return;
  }
  const auto now = clock_.now();
  if (now - m->ready_at < kStableAfter) {
    failing_ = true;
    backoff_.failed(now);
  } else {
    backoff_.stable_exit(now);
  }
  remove_dir(m->dir);
  ++pending_restarts_;
  maintain();
}

std::shared_ptr<Instance> Supervisor::use(const std::shared_ptr<Member>& m) {
  m->last_used = clock_.now();
  ++m->calls;
  if (recycling_.calls_exhausted(m->calls)) retire(m, "max_calls");
  return m->inst;
}

void Supervisor::retire(const std::shared_ptr<Member>& m, const std::string& reason) {
  if (!m->live()) return;
  m->state = MemberState::kRetiring;
  ++recycles_[reason];
  metrics_.add("toolbridge_recycles_total",
               telemetry::labels({{"server", server_.name}, {"reason", reason}}));
  spdlog::info("[{}#{}] recycling ({}) after {} calls", server_.name, m->inst->number(), reason,
               m->calls);
  if (!m->key.empty() && callbacks_)
    callbacks_->member_lost(*m, "it was recycled (" + reason + ")");
  // It finishes the calls it has; the check is posted so a call just picked is sent first.
  std::weak_ptr<Supervisor> weak = shared_from_this();
  std::weak_ptr<Member> weak_member = m;
  auto drained = [weak, weak_member]() {
    asio::post([weak, weak_member]() {
      auto sup = weak.lock();
      auto member = weak_member.lock();
      if (sup && member && member->inst->in_flight() == 0) sup->stop_member(member, true);
    });
  };
  m->inst->on_idle = drained;
  asio::post(io_, drained);
  maintain();
}

void Supervisor::stop_member(const std::shared_ptr<Member>& m, bool remove_dir) {
  if (m->state == MemberState::kStopping) return;
  // An exited member is stopped all the same (its instance's stop is then a no-op), so its
  // directory is removed; it stays exited.
  if (!m->exited()) m->state = MemberState::kStopping;
  m->inst->on_exit = nullptr;
  m->inst->on_idle = nullptr;
  asio::co_spawn(
      io_,
      [self = shared_from_this(), m, remove_dir]() -> asio::awaitable<void> {
        co_await m->inst->stop();
        m->state = MemberState::kExited;
        self->erase_member(m);
        if (remove_dir) self->remove_dir(m->dir);
        self->tell_members_changed();
        self->maintain();
      },
      base::log_failure("instance replacement"));
}

asio::awaitable<void> Supervisor::stop() {
  stopped_ = true;
  retry_timer_.cancel();
  refill_timer_.cancel();
  tick_timer_.cancel();
  tell_members_changed();
  // All at once: each is bounded by its own stop ladder; 1,000 session instances must not stop
  // one after another.
  auto members = members_;
  std::size_t remaining = members.size();
  base::Timer all_done(io_, clock_);
  for (const auto& m : members) {
    m->inst->on_exit = nullptr;
    m->inst->on_idle = nullptr;
    asio::co_spawn(io_, m->inst->stop(), [&](std::exception_ptr e) {
      base::log_failure("instance stop")(e);
      if (--remaining == 0) all_done.cancel();
    });
  }
  boost::system::error_code ec;
  if (remaining > 0) co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  for (const auto& m : members) remove_dir(m->dir);
  members_.clear();
}

// ---------------------------------------------------------------------------------------------
// Keeping the policy's members running

std::size_t Supervisor::wanted_members() const {
  const std::size_t max = server_.effective_max_instances();
  const std::size_t spares = server_.effective_spares();
  std::size_t wanted = 0;
  switch (server_.policy) {
    case Policy::kShared:
      if (!dormant_ && live() == 0) wanted = 1;
      break;
    case Policy::kPool: {
      const std::size_t n = live();
      const std::size_t now_starting = starting();
      const auto idle = static_cast<std::size_t>(
          std::count_if(members_.begin(), members_.end(),
                        [](const auto& m) { return m->ready() && m->inst->in_flight() == 0; }));
      if (n < server_.min_instances) wanted = server_.min_instances - n;
      if (idle + now_starting < spares) wanted = std::max(wanted, spares - idle - now_starting);
      wanted = std::min(wanted, max > n ? max - n : 0);
      break;
    }
    case Policy::kPerSession: {
      const auto unbound = static_cast<std::size_t>(
          std::count_if(members_.begin(), members_.end(),
                        [](const auto& m) { return m->key.empty() && m->live(); }));
      // The catalog needs one instance even with spares: 0; it stays as the first spare.
      const std::size_t want_unbound =
          catalog_ || uses_id_ ? spares : std::max<std::size_t>(spares, 1);
      if (unbound < want_unbound) wanted = want_unbound - unbound;
      wanted = std::min(wanted, max > members_.size() ? max - members_.size() : 0);
      break;
    }
  }
  return wanted;
}

void Supervisor::maintain() {
  if (stopped_ || bound_only_ || !server_.enabled) return;
  const auto now = clock_.now();
  if (backoff_.waiting(now)) {
    // Backing off after failures: come back when the wait is over.
    if (!retry_armed_) {
      retry_armed_ = true;
      retry_timer_.expires_after(backoff_.retry_at() - now);
      retry_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
        auto sup = weak.lock();
        if (!sup) return;
        sup->retry_armed_ = false;
        if (!ec) sup->maintain();
      });
      spdlog::warn("[{}] next start attempt in {:.1f} s", server_.name,
                   std::chrono::duration<double>(backoff_.retry_at() - now).count());
    }
    return;
  }
  const std::size_t wanted = wanted_members();
  for (std::size_t i = 0; i < wanted; ++i) launch(std::string());
  if (wanted > 0) arm_tick();
}

void Supervisor::refill_soon() {
  if (refill_armed_) return;
  refill_armed_ = true;
  refill_timer_.expires_after(kRefillDelay);
  refill_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    auto sup = weak.lock();
    if (!sup) return;
    sup->refill_armed_ = false;
    if (!ec) sup->maintain();
  });
}

void Supervisor::wake_from_dormant() {
  if (!dormant_) return;
  spdlog::info("[{}] starting again for a call after being idle", server_.name);
  dormant_ = false;
}

// ---------------------------------------------------------------------------------------------
// Recycling by time and memory

void Supervisor::arm_tick() {
  const bool needed = server_.max_age.count() > 0 || server_.max_rss_mb > 0 ||
                      server_.effective_idle_ttl().count() > 0;
  if (ticking_ || stopped_ || !needed) return;
  ticking_ = true;
  tick_timer_.expires_after(kTickInterval);
  tick_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    auto sup = weak.lock();
    if (!sup) return;
    sup->ticking_ = false;
    if (ec || sup->stopped_) return;
    sup->tick();
    sup->arm_tick();
  });
}

void Supervisor::tick() {
  const auto now = clock_.now();
  const bool check_rss = server_.max_rss_mb > 0 && now >= next_rss_check_;
  if (check_rss) next_rss_check_ = now + server_.rss_check_interval;
  const auto members = members_;  // retire() may change members_
  for (const auto& m : members) {
    if (!m->ready()) continue;
    if (recycling_.too_old(use_of(*m), now)) {
      retire(m, "max_age");
    } else if (check_rss) {
      const std::size_t rss = process::resident_bytes(m->inst->pid());
      if (rss > server_.max_rss_mb * (std::size_t{1} << 20)) {
        spdlog::warn("[{}#{}] resident memory {} MiB is above max_rss_mb ({})", server_.name,
                     m->inst->number(), rss >> 20, server_.max_rss_mb);
        retire(m, "max_rss");
      }
    }
  }
  recycle_idle(now);
}

void Supervisor::recycle_idle(time_point now) {
  const auto members = members_;  // retire() may change members_
  if (server_.policy == Policy::kShared) {
    for (const auto& m : members) {
      if (recycling_.idle_too_long(use_of(*m), now)) {
        dormant_ = true;  // the next call starts it again
        retire(m, "idle");
      }
    }
  } else if (server_.policy == Policy::kPool) {
    // Shrink towards min_instances, keeping the configured spares.
    std::vector<MemberUse> uses;
    uses.reserve(members.size());
    for (const auto& m : members) uses.push_back(use_of(*m));
    for (std::size_t i : recycling_.idle_pool_members(uses, live(), now))
      retire(members[i], "idle");
  }
}

}  // namespace toolbridge::upstream
