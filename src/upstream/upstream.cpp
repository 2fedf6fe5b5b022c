#include "upstream/upstream.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

namespace toolbridge::upstream {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using config::Policy;

namespace {
// An instance that dies sooner than this after becoming ready counts as a failed start, so a
// server that crashes right after start backs off instead of restarting in a tight loop.
constexpr auto kStableAfter = 10s;
constexpr auto kTickInterval = 1s;
constexpr auto kRefillDelay = 50ms;

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

std::string seconds_text(std::chrono::milliseconds d) {
  return fmt::format("{:g} s", static_cast<double>(d.count()) / 1000.0);
}
}  // namespace

config::Server for_session(const config::Server& server, std::string_view id,
                           std::string_view dir) {
  config::Server out = server;
  auto expand = [&](std::string& text) {
    replace_all(text, "${session.id}", id);
    replace_all(text, "${session.dir}", dir);
  };
  for (auto& a : out.args) expand(a);
  for (auto& [k, v] : out.env) expand(v);
  expand(out.cwd);
  return out;
}

asio::awaitable<void> StartGate::acquire() {
  if (free_ > 0) {
    --free_;
    co_return;
  }
  auto t = std::make_shared<asio::steady_timer>(io_, asio::steady_timer::time_point::max());
  waiters_.push_back(t);
  boost::system::error_code ec;
  co_await t->async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

void StartGate::release() {
  if (waiters_.empty()) {
    ++free_;
    return;
  }
  waiters_.front()->cancel();  // hands the permit straight to the next waiter
  waiters_.pop_front();
}

std::string_view to_string(Upstream::State s) {
  switch (s) {
    case Upstream::State::kStarting:
      return "starting";
    case Upstream::State::kReady:
      return "ready";
    case Upstream::State::kBackoff:
      return "backoff";
    case Upstream::State::kDisabled:
      return "disabled";
    case Upstream::State::kStopped:
      return "stopped";
  }
  return "unknown";
}

Upstream::Upstream(asio::io_context& io, config::Server server, StartGate& gate,
                   telemetry::Metrics& metrics, std::string session_dir_root)
    : io_(io),
      server_(std::move(server)),
      gate_(gate),
      metrics_(metrics),
      session_dir_root_(std::move(session_dir_root)),
      retry_timer_(io),
      refill_timer_(io),
      tick_timer_(io) {
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

Upstream::State Upstream::state() const {
  if (!server_.enabled) return State::kDisabled;
  if (stopped_) return State::kStopped;
  for (const auto& m : members_) {
    if (m->ready && !m->retiring) return State::kReady;
  }
  if (failing_) return Clock::now() < retry_at_ ? State::kBackoff : State::kStarting;
  // Known catalog, nothing failing: instances start on demand (a session, a recycle, idleness).
  if (catalog_) return State::kReady;
  return State::kStarting;
}

double Upstream::retry_in_seconds() const {
  if (state() != State::kBackoff) return 0;
  const auto left = retry_at_ - Clock::now();
  return std::max(0.0, std::chrono::duration<double>(left).count());
}

std::string Upstream::describe_unavailable() const {
  switch (state()) {
    case State::kStarting:
      return "server '" + server_.name + "' is starting" +
             (last_error_.empty() ? "" : " (last failure: " + last_error_ + ")") +
             "; retry shortly";
    case State::kBackoff:
      return fmt::format("server '{}' is unavailable: {}; next start attempt in {:.1f} s",
                         server_.name, last_error_, retry_in_seconds());
    case State::kDisabled:
      return "server '" + server_.name + "' is disabled in the configuration";
    case State::kStopped:
      return "server '" + server_.name + "' is shutting down";
    case State::kReady:
      return "server '" + server_.name + "' is ready";
  }
  return "server '" + server_.name + "' is unavailable";
}

std::size_t Upstream::live() const {
  return static_cast<std::size_t>(std::count_if(
      members_.begin(), members_.end(), [](const auto& m) { return !m->retiring && !m->exited; }));
}

std::size_t Upstream::starting() const {
  return static_cast<std::size_t>(
      std::count_if(members_.begin(), members_.end(),
                    [](const auto& m) { return !m->retiring && !m->exited && !m->ready; }));
}

std::size_t Upstream::in_flight() const {
  std::size_t n = 0;
  for (const auto& m : members_) n += m->inst->in_flight();
  return n;
}

std::shared_ptr<Instance> Upstream::any_ready() const {
  for (const auto& m : members_) {
    if (m->ready && !m->retiring) return m->inst;
  }
  return nullptr;
}

std::vector<pid_t> Upstream::pids() const {
  std::vector<pid_t> out;
  for (const auto& m : members_) {
    if (!m->exited && m->inst->pid() > 0) out.push_back(m->inst->pid());
  }
  return out;
}

Upstream::Census Upstream::census() const {
  Census c;
  for (const auto& m : members_) {
    if (m->exited) continue;
    if (m->retiring) {
      ++c.retiring;
    } else if (!m->ready) {
      ++c.starting;
    } else if (m->inst->in_flight() > 0) {
      ++c.busy;
    } else {
      ++c.idle;
      if (server_.policy == Policy::kPool ||
          (server_.policy == Policy::kPerSession && m->key.empty()))
        ++c.spares;
    }
  }
  c.sessions = bindings_.size();
  return c;
}

// ---------------------------------------------------------------------------------------------
// Starting and stopping instances

asio::awaitable<void> Upstream::start() {
  if (!server_.enabled) co_return;
  // The first instance starts here so that the gateway's start-up waits for the catalog; the
  // rest of what the policy keeps running is started by maintain() once it is ready.
  auto first = launch(std::string());
  while (!first->ready && !first->exited && !stopped_ && !failing_) {
    auto t = std::make_shared<asio::steady_timer>(io_, asio::steady_timer::time_point::max());
    waiters_.push_back(t);
    boost::system::error_code ec;
    co_await t->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  arm_tick();
}

std::string Upstream::make_dir(std::uint64_t number, std::string& error) {
  if (session_dir_root_.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    session_dir_root_ = fmt::format("{}/toolbridge-{}", tmp && *tmp ? tmp : "/tmp", ::getpid());
  }
  if (::mkdir(session_dir_root_.c_str(), 0700) != 0 && errno != EEXIST) {
    error = fmt::format("cannot create session_dir_root {}: {}", session_dir_root_,
                        std::strerror(errno));
    return {};
  }
  std::string dir = fmt::format("{}/{}-{}", session_dir_root_, server_.name, number);
  if (::mkdir(dir.c_str(), 0700) != 0) {
    error = fmt::format("cannot create session directory {}: {}", dir, std::strerror(errno));
    return {};
  }
  return dir;
}

void Upstream::remove_dir(const std::string& dir) const {
  if (dir.empty() || server_.keep_session_dir) return;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec)
    spdlog::warn("[{}] could not remove session directory {}: {}", server_.name, dir, ec.message());
}

std::shared_ptr<Upstream::Member> Upstream::launch(const std::string& key) {
  auto m = std::make_shared<Member>();
  m->key = key;
  const std::uint64_t number = ++instances_started_;
  if (pending_restarts_ > 0) {
    --pending_restarts_;
    ++restarts_;
    metrics_.add("toolbridge_restarts_total", telemetry::labels({{"server", server_.name}}));
  }
  std::string dir_error;
  if (uses_dir_) m->dir = make_dir(number, dir_error);
  m->inst = std::make_shared<Instance>(
      io_,
      server_.policy == Policy::kPerSession
          ? for_session(server_, key.empty() ? std::string_view("toolbridge-catalog") : key, m->dir)
          : server_,
      number);
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
      asio::detached);
  return m;
}

asio::awaitable<void> Upstream::run_start(std::shared_ptr<Member> m) {
  auto self = shared_from_this();
  co_await gate_.acquire();
  if (stopped_ || m->retiring) {
    // Released or shut down while it waited for its turn.
    gate_.release();
    erase_member(m);
    remove_dir(m->dir);
    wake_waiters();
    co_return;
  }
  std::weak_ptr<Upstream> weak = self;
  m->inst->on_invalid_line = [weak]() {
    if (auto up = weak.lock()) {
      up->metrics_.add("toolbridge_upstream_invalid_lines_total",
                       telemetry::labels({{"server", up->server_.name}}));
    }
  };
  const auto began = Clock::now();
  const std::string error = co_await m->inst->start();
  gate_.release();
  if (stopped_ || m->retiring) {
    co_await m->inst->stop();
    erase_member(m);
    remove_dir(m->dir);
    wake_waiters();
    co_return;
  }
  if (!error.empty()) {
    start_failed(m, error);
    co_return;
  }
  const auto now = Clock::now();
  m->ready = true;
  m->ready_at = now;
  m->last_used = now;
  failing_ = false;
  const double secs = std::chrono::duration<double>(now - began).count();
  spdlog::info("[{}#{}] ready in {:.0f} ms: protocol {}, {} tools, {} resources, {} prompts",
               server_.name, m->inst->number(), secs * 1000, mcp::to_string(m->inst->version()),
               m->inst->catalog().tools.size(), m->inst->catalog().resources.size(),
               m->inst->catalog().prompts.size());
  std::weak_ptr<Member> weak_member = m;
  m->inst->on_exit = [weak, weak_member](const std::string& reason) {
    auto up = weak.lock();
    auto member = weak_member.lock();
    if (up && member) up->on_member_exit(member, reason);
  };
  m->inst->on_catalog_changed = [weak, weak_member]() {
    auto up = weak.lock();
    auto member = weak_member.lock();
    if (!up || !member) return;
    up->catalog_ = std::make_shared<const Catalog>(member->inst->catalog());
    if (up->on_catalog_changed) up->on_catalog_changed();
  };
  // Instances of one server list the same catalog; per_session reads it once, not per session.
  if (!catalog_ || server_.policy != Policy::kPerSession) {
    catalog_ = std::make_shared<const Catalog>(m->inst->catalog());
    if (on_catalog_changed) on_catalog_changed();
  }
  if (uses_id_ && m->key.empty()) {
    // It ran only to read the catalog: an instance made for no session cannot serve one.
    stop_member(m, true);
    co_return;
  }
  wake_waiters();
  maintain();
}

void Upstream::start_failed(const std::shared_ptr<Member>& m, const std::string& error) {
  erase_member(m);
  remove_dir(m->dir);
  m->exited = true;
  last_error_ = error;
  ++consecutive_failures_;
  failing_ = true;
  ++pending_restarts_;
  retry_at_ = Clock::now() + backoff_delay();
  spdlog::error("[{}] failed to start: {}", server_.name, error);
  metrics_.add("toolbridge_start_failures_total", telemetry::labels({{"server", server_.name}}));
  // A session waiting for this instance starts over (and hears about the failure).
  if (auto it = bindings_.find(m->key);
      !m->key.empty() && it != bindings_.end() && it->second.member == m) {
    bindings_.erase(it);
  }
  wake_waiters();
  maintain();
}

void Upstream::erase_member(const std::shared_ptr<Member>& m) {
  std::erase(members_, m);
}

void Upstream::on_member_exit(const std::shared_ptr<Member>& m, const std::string& reason) {
  m->exited = true;
  erase_member(m);
  if (stopped_) return;
  wake_waiters();
  if (m->retiring) {
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
    if (auto it = bindings_.find(m->key); it != bindings_.end() && it->second.member == m) {
      it->second.lost = reason;
    }
    maintain();
    return;
  }
  const bool early = Clock::now() - m->ready_at < kStableAfter;
  if (early) {
    ++consecutive_failures_;
    failing_ = true;
  } else {
    consecutive_failures_ = 0;
  }
  retry_at_ = Clock::now() + backoff_delay();
  remove_dir(m->dir);
  ++pending_restarts_;
  maintain();
}

void Upstream::retire(const std::shared_ptr<Member>& m, const std::string& reason) {
  if (m->retiring || m->exited) return;
  m->retiring = true;
  ++recycles_[reason];
  metrics_.add("toolbridge_recycles_total",
               telemetry::labels({{"server", server_.name}, {"reason", reason}}));
  spdlog::info("[{}#{}] recycling ({}) after {} calls", server_.name, m->inst->number(), reason,
               m->calls);
  if (!m->key.empty()) {
    if (auto it = bindings_.find(m->key); it != bindings_.end() && it->second.member == m) {
      it->second.lost = "it was recycled (" + reason + ")";
    }
  }
  // It finishes the calls it has; the check is posted so a call just picked is sent first.
  std::weak_ptr<Upstream> weak = shared_from_this();
  std::weak_ptr<Member> weak_member = m;
  auto drained = [weak, weak_member]() {
    asio::post([weak, weak_member]() {
      auto up = weak.lock();
      auto member = weak_member.lock();
      if (up && member && member->inst->in_flight() == 0) up->stop_member(member, true);
    });
  };
  m->inst->on_idle = drained;
  asio::post(io_, drained);
  maintain();
}

void Upstream::stop_member(const std::shared_ptr<Member>& m, bool remove_dir) {
  if (m->stopping) return;
  m->stopping = true;
  m->retiring = true;
  m->inst->on_exit = nullptr;
  m->inst->on_idle = nullptr;
  asio::co_spawn(
      io_,
      [self = shared_from_this(), m, remove_dir]() -> asio::awaitable<void> {
        co_await m->inst->stop();
        m->exited = true;
        self->erase_member(m);
        if (remove_dir) self->remove_dir(m->dir);
        self->wake_waiters();
        self->maintain();
      },
      asio::detached);
}

void Upstream::maintain() {
  if (stopped_ || !server_.enabled) return;
  const auto now = Clock::now();
  if (now < retry_at_) {
    // Backing off after failures: come back when the wait is over.
    if (!retry_armed_) {
      retry_armed_ = true;
      retry_timer_.expires_at(retry_at_);
      retry_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
        auto up = weak.lock();
        if (!up) return;
        up->retry_armed_ = false;
        if (!ec) up->maintain();
      });
      spdlog::warn("[{}] next start attempt in {:.1f} s", server_.name,
                   std::chrono::duration<double>(retry_at_ - now).count());
    }
    return;
  }
  const std::size_t max = server_.effective_max_instances();
  const std::size_t spares = server_.effective_spares();
  std::size_t wanted = 0;
  switch (server_.policy) {
    case Policy::kShared:
      if (!dormant_ && live() == 0) wanted = 1;
      break;
    case Policy::kPool: {
      const std::size_t n = live();
      std::size_t idle = 0;
      for (const auto& m : members_) {
        if (m->ready && !m->retiring && !m->exited && m->inst->in_flight() == 0) ++idle;
      }
      if (n < server_.min_instances) wanted = server_.min_instances - n;
      if (idle + starting() < spares) wanted = std::max(wanted, spares - idle - starting());
      wanted = std::min(wanted, max > n ? max - n : 0);
      break;
    }
    case Policy::kPerSession: {
      std::size_t unbound = 0;
      for (const auto& m : members_) {
        if (m->key.empty() && !m->retiring && !m->exited) ++unbound;
      }
      // The catalog needs one instance even with spares: 0; it stays as the first spare.
      const std::size_t want_unbound =
          catalog_ || uses_id_ ? spares : std::max<std::size_t>(spares, 1);
      if (unbound < want_unbound) wanted = want_unbound - unbound;
      wanted = std::min(wanted, max > members_.size() ? max - members_.size() : 0);
      break;
    }
  }
  for (std::size_t i = 0; i < wanted; ++i) launch(std::string());
  if (wanted > 0) arm_tick();
}

void Upstream::arm_tick() {
  const bool needed = server_.max_age.count() > 0 || server_.max_rss_mb > 0 ||
                      server_.effective_idle_ttl().count() > 0;
  if (ticking_ || stopped_ || !needed) return;
  ticking_ = true;
  tick_timer_.expires_after(kTickInterval);
  tick_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    auto up = weak.lock();
    if (!up) return;
    up->ticking_ = false;
    if (ec || up->stopped_) return;
    up->tick();
    up->arm_tick();
  });
}

void Upstream::tick() {
  const auto now = Clock::now();
  const bool check_rss = server_.max_rss_mb > 0 && now >= next_rss_check_;
  if (check_rss) next_rss_check_ = now + server_.rss_check_interval;
  const auto members = members_;  // retire() may change members_
  for (const auto& m : members) {
    if (!m->ready || m->retiring || m->exited) continue;
    if (server_.max_age.count() > 0 && now - m->ready_at >= server_.max_age) {
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
  const auto ttl = server_.effective_idle_ttl();
  if (ttl.count() == 0) return;
  auto idle_for_ttl = [&](const std::shared_ptr<Member>& m) {
    return m->ready && !m->retiring && !m->exited && m->inst->in_flight() == 0 &&
           now - m->last_used >= ttl;
  };
  if (server_.policy == Policy::kShared) {
    for (const auto& m : members) {
      if (idle_for_ttl(m)) {
        dormant_ = true;  // the next call starts it again
        retire(m, "idle");
      }
    }
  } else if (server_.policy == Policy::kPool) {
    // Shrink towards min_instances, keeping the configured spares.
    std::size_t idle = 0;
    for (const auto& m : members_) {
      if (m->ready && !m->retiring && !m->exited && m->inst->in_flight() == 0) ++idle;
    }
    const std::size_t spares = server_.effective_spares();
    for (const auto& m : members) {
      if (live() <= server_.min_instances || idle <= spares) break;
      if (idle_for_ttl(m)) {
        retire(m, "idle");
        --idle;
      }
    }
  }
}

void Upstream::wake_waiters() {
  auto waiters = std::move(waiters_);
  waiters_.clear();
  for (auto& t : waiters) t->cancel();
}

asio::awaitable<void> Upstream::stop() {
  stopped_ = true;
  retry_timer_.cancel();
  refill_timer_.cancel();
  tick_timer_.cancel();
  wake_waiters();
  // All at once: each is bounded by its own stop ladder; 1,000 session instances must not stop
  // one after another.
  auto members = members_;
  std::size_t remaining = members.size();
  asio::steady_timer all_done(io_, asio::steady_timer::time_point::max());
  for (const auto& m : members) {
    m->inst->on_exit = nullptr;
    m->inst->on_idle = nullptr;
    asio::co_spawn(io_, m->inst->stop(), [&](std::exception_ptr) {
      if (--remaining == 0) all_done.cancel();
    });
  }
  boost::system::error_code ec;
  if (remaining > 0) co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  for (const auto& m : members) remove_dir(m->dir);
  for (const auto& [key, b] : bindings_) {
    if (b.member) remove_dir(b.member->dir);  // instances that died before the session ended
  }
  members_.clear();
  bindings_.clear();
}

// ---------------------------------------------------------------------------------------------
// Choosing an instance

std::shared_ptr<Instance> Upstream::use(const std::shared_ptr<Member>& m) {
  m->last_used = Clock::now();
  ++m->calls;
  if (server_.max_calls > 0 && m->calls >= server_.max_calls) retire(m, "max_calls");
  return m->inst;
}

Upstream::Pick Upstream::pick(const std::string& key) {
  if (!server_.enabled || stopped_) return Pick{nullptr, describe_unavailable(), false};
  if (server_.policy != Policy::kPerSession) {
    std::shared_ptr<Member> best;
    for (const auto& m : members_) {
      if (!m->ready || m->retiring || m->exited) continue;
      if (!best || m->inst->in_flight() < best->inst->in_flight()) best = m;
    }
    if (best && server_.policy == Policy::kPool) {
      // Queue pressure: every instance has target_in_flight calls; add one (never waiting for
      // it unless the busiest limit is reached).
      const std::size_t busy = best->inst->in_flight();
      if (busy >= server_.target_in_flight && live() < server_.effective_max_instances() &&
          starting() == 0 && Clock::now() >= retry_at_) {
        launch(std::string());
      }
      if (busy >= server_.max_in_flight && starting() > 0) return Pick{nullptr, {}, true};
    }
    if (best) return Pick{use(best), {}, false};
    if (failing_) return Pick{nullptr, describe_unavailable(), false};
    if (dormant_) {
      spdlog::info("[{}] starting again for a call after being idle", server_.name);
      dormant_ = false;
    }
    // Nothing running (idle shutdown, a pool scaled to zero): this call starts one.
    if (live() == 0 && Clock::now() >= retry_at_) launch(std::string());
    return Pick{nullptr, {}, true};
  }

  const auto now = Clock::now();
  if (auto it = bindings_.find(key); it != bindings_.end()) {
    Binding& b = it->second;
    b.last_used = now;
    if (!b.lost.empty()) {
      std::string message = fmt::format(
          "this session's instance of server '{}' is gone ({}); whatever state it held is lost",
          server_.name, b.lost);
      if (server_.rebind_on_exit) {
        message += ". The session's next call gets a fresh instance";
        if (b.member && !b.member->stopping) remove_dir(b.member->dir);
        bindings_.erase(it);
      } else {
        message += ". End the session (DELETE /mcp, or toolbridge/release) and start a new one";
      }
      return Pick{nullptr, std::move(message), false};
    }
    if (b.member->ready) return Pick{use(b.member), {}, false};
    return Pick{nullptr, {}, true};  // its own instance is starting
  }
  // A new session: a warm spare if there is one, else an instance of its own.
  std::shared_ptr<Member> spare;
  for (const auto& m : members_) {
    if (m->key.empty() && m->ready && !m->retiring && !m->exited && !uses_id_) {
      spare = m;
      break;
    }
  }
  if (spare) {
    awaiting_spare_.erase(key);
    spare->key = key;
    bindings_[key] = Binding{spare, {}, now};
    spdlog::debug("[{}#{}] bound to session {}", server_.name, spare->inst->number(), key);
    auto inst = use(spare);
    // The replacement starts a moment later: a process start takes milliseconds of CPU, which
    // on a small machine would land on this session's first call.
    if (!refill_armed_) {
      refill_armed_ = true;
      refill_timer_.expires_after(kRefillDelay);
      refill_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
        auto up = weak.lock();
        if (!up) return;
        up->refill_armed_ = false;
        if (!ec) up->maintain();
      });
    }
    return Pick{std::move(inst), {}, false};
  }
  if (failing_ || now < retry_at_) return Pick{nullptr, describe_unavailable(), false};
  // Spares already starting serve the sessions that arrived first; a session launches its own
  // instance only when none is left for it (at the back of the start queue it would wait longer).
  std::size_t starting_spares = 0;
  for (const auto& m : members_) {
    if (m->key.empty() && !m->ready && !m->retiring && !m->exited) ++starting_spares;
  }
  const bool queued = awaiting_spare_.contains(key);
  if (!uses_id_ && starting_spares > awaiting_spare_.size() - (queued ? 1 : 0)) {
    awaiting_spare_.insert(key);
    return Pick{nullptr, {}, true};
  }
  awaiting_spare_.erase(key);
  if (members_.size() >= server_.effective_max_instances()) return Pick{nullptr, {}, true};
  auto m = launch(key);
  bindings_[key] = Binding{m, {}, now};
  return Pick{nullptr, {}, true};
}

std::string Upstream::checkout_timeout_message(const std::string& key) const {
  const auto limit = seconds_text(server_.checkout_timeout);
  if (server_.policy == Policy::kPerSession && !bindings_.contains(key) &&
      members_.size() >= server_.effective_max_instances()) {
    return fmt::format(
        "server '{}' has all its max_instances ({}) bound to sessions and none was released "
        "within {} (checkout_timeout); end finished sessions (DELETE /mcp or toolbridge/release) "
        "or raise max_instances",
        server_.name, server_.effective_max_instances(), limit);
  }
  return fmt::format(
      "no instance of server '{}' was ready within {} (checkout_timeout); {} "
      "starting{}",
      server_.name, limit, starting(), last_error_.empty() ? "" : "; last failure: " + last_error_);
}

asio::awaitable<Upstream::Pick> Upstream::checkout(std::string key, Clock::time_point deadline) {
  for (;;) {
    Pick p = pick(key);
    if (p.instance || !p.wait) {
      if (!p.instance) awaiting_spare_.erase(key);
      co_return p;
    }
    if (Clock::now() >= deadline) {
      awaiting_spare_.erase(key);
      co_return Pick{nullptr, checkout_timeout_message(key), false};
    }
    auto t = std::make_shared<asio::steady_timer>(io_, deadline);
    waiters_.push_back(t);
    boost::system::error_code ec;
    co_await t->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) std::erase(waiters_, t);  // timed out rather than woken
  }
}

std::size_t Upstream::release(const std::string& key) {
  auto it = bindings_.find(key);
  if (it == bindings_.end()) return 0;
  auto member = it->second.member;
  bindings_.erase(it);
  if (member->exited) {
    remove_dir(member->dir);
  } else {
    spdlog::debug("[{}#{}] released by session {}", server_.name, member->inst->number(), key);
    stop_member(member, true);
  }
  wake_waiters();
  return 1;
}

void Upstream::release_idle(Clock::time_point cutoff,
                            const std::function<bool(const std::string&)>& keep) {
  std::vector<std::string> idle;
  for (const auto& [key, b] : bindings_) {
    const bool busy = b.member && !b.member->exited && b.member->inst->in_flight() > 0;
    if (!busy && b.last_used < cutoff && !keep(key)) idle.push_back(key);
  }
  for (const auto& key : idle) {
    spdlog::debug("[{}] session {} expired after being idle", server_.name, key);
    release(key);
  }
}

std::chrono::milliseconds Upstream::backoff_delay() {
  if (consecutive_failures_ == 0) return 0ms;
  auto delay = server_.restart_backoff_initial;
  for (int i = 1; i < consecutive_failures_ && delay < server_.restart_backoff_max; ++i) delay *= 2;
  delay = std::min(delay, server_.restart_backoff_max);
  // +-20% jitter so servers that failed together do not retry in lockstep.
  thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  return std::chrono::milliseconds(
      static_cast<long>(static_cast<double>(delay.count()) * jitter(rng)));
}

}  // namespace toolbridge::upstream
