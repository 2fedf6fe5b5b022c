#include "upstream/upstream.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "upstream/recycle.h"

namespace toolbridge::upstream {

namespace asio = boost::asio;
using config::Policy;

namespace {

std::string seconds_text(std::chrono::milliseconds d) {
  return fmt::format("{:g} s", static_cast<double>(d.count()) / 1000.0);
}

std::unique_ptr<Placement> placement_for(const config::Server& s, bool spares_serve_sessions) {
  switch (s.policy) {
    case Policy::kShared:
      return std::make_unique<SharedPlacement>();
    case Policy::kPool:
      return std::make_unique<LeastLoadedPlacement>(s.target_in_flight, s.max_in_flight,
                                                    s.effective_max_instances());
    case Policy::kPerSession:
      return std::make_unique<SessionAffinityPlacement>(s.effective_max_instances(),
                                                        spares_serve_sessions);
  }
  return std::make_unique<SharedPlacement>();
}

Candidate candidate(const Member& m) {
  return Candidate{m.ready(), !m.live(), m.inst->in_flight(), m.key};
}

}  // namespace

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
                   telemetry::Metrics& metrics, std::string session_dir_root,
                   const base::Clock& clock, base::RandomSource& random)
    : io_(io),
      clock_(clock),
      supervisor_(std::make_shared<Supervisor>(io, std::move(server), gate, metrics,
                                               std::move(session_dir_root), clock, random)) {
  supervisor_->set_callbacks(this);
  placement_ = placement_for(supervisor_->config(), supervisor_->spares_serve_sessions());
}

// Starts and stops still running finish without telling anyone.
Upstream::~Upstream() {
  supervisor_->set_callbacks(nullptr);
}

Upstream::State Upstream::state() const {
  if (!config().enabled) return State::kDisabled;
  if (supervisor_->stopped()) return State::kStopped;
  for (const auto& m : supervisor_->members()) {
    if (m->ready()) return State::kReady;
  }
  if (supervisor_->failing())
    return supervisor_->backing_off() ? State::kBackoff : State::kStarting;
  // Known catalog, nothing failing: instances start on demand (a session, a recycle, idleness).
  if (catalog()) return State::kReady;
  return State::kStarting;
}

double Upstream::retry_in_seconds() const {
  if (state() != State::kBackoff) return 0;
  const auto left = supervisor_->retry_at() - clock_.now();
  return std::max(0.0, std::chrono::duration<double>(left).count());
}

std::string Upstream::describe_unavailable() const {
  const std::string& name = config().name;
  const std::string& last_error = supervisor_->last_error();
  switch (state()) {
    case State::kStarting:
      return "server '" + name + "' is starting" +
             (last_error.empty() ? "" : " (last failure: " + last_error + ")") + "; retry shortly";
    case State::kBackoff:
      return fmt::format("server '{}' is unavailable: {}; next start attempt in {:.1f} s", name,
                         last_error, retry_in_seconds());
    case State::kDisabled:
      return "server '" + name + "' is disabled in the configuration";
    case State::kStopped:
      return "server '" + name + "' is shutting down";
    case State::kReady:
      return "server '" + name + "' is ready";
  }
  return "server '" + name + "' is unavailable";
}

std::size_t Upstream::in_flight() const {
  std::size_t n = 0;
  for (const auto& m : supervisor_->members()) n += m->inst->in_flight();
  return n;
}

std::shared_ptr<Instance> Upstream::any_ready() const {
  for (const auto& m : supervisor_->members()) {
    if (m->ready()) return m->inst;
  }
  return nullptr;
}

std::vector<pid_t> Upstream::pids() const {
  std::vector<pid_t> out;
  for (const auto& m : supervisor_->members()) {
    if (!m->exited() && m->inst->pid() > 0) out.push_back(m->inst->pid());
  }
  return out;
}

Upstream::Census Upstream::census() const {
  Census c;
  const Policy policy = config().policy;
  for (const auto& m : supervisor_->members()) {
    if (m->exited()) continue;
    if (!m->live()) {
      ++c.retiring;
    } else if (!m->ready()) {
      ++c.starting;
    } else if (m->inst->in_flight() > 0) {
      ++c.busy;
    } else {
      ++c.idle;
      if (policy == Policy::kPool || (policy == Policy::kPerSession && m->key.empty())) ++c.spares;
    }
  }
  c.sessions = bindings_.size();
  return c;
}

// ---------------------------------------------------------------------------------------------
// Starting and stopping

asio::awaitable<void> Upstream::start() {
  if (!config().enabled) co_return;
  // The first instance starts here so that the gateway's start-up waits for the catalog; the
  // rest of what the policy keeps running is started by the supervisor once it is ready.
  auto first = supervisor_->launch(std::string());
  while (first->starting() && !supervisor_->stopped() && !supervisor_->failing()) {
    auto t = std::make_shared<base::Timer>(io_, clock_);
    waiters_.push_back(t);
    boost::system::error_code ec;
    co_await t->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  supervisor_->arm_tick();
}

asio::awaitable<void> Upstream::stop() {
  co_await supervisor_->stop();
  for (const auto& [key, b] : bindings_) {
    if (b.member)
      supervisor_->remove_dir(b.member->dir);  // instances that died before the session ended
  }
  bindings_.clear();
}

void Upstream::wake_waiters() {
  auto waiters = std::move(waiters_);
  waiters_.clear();
  for (auto& t : waiters) t->cancel();
}

void Upstream::start_failed(const Member& m) {
  if (auto it = bindings_.find(m.key); it != bindings_.end() && it->second.member.get() == &m) {
    bindings_.erase(it);
  }
}

void Upstream::member_lost(const Member& m, const std::string& why) {
  if (auto it = bindings_.find(m.key); it != bindings_.end() && it->second.member.get() == &m) {
    it->second.lost = why;
  }
}

void Upstream::catalog_changed() {
  if (on_catalog_changed) on_catalog_changed();
  wake_waiters();  // until_started() waits for the first catalog
}

// ---------------------------------------------------------------------------------------------
// Choosing an instance

Upstream::Pick Upstream::pick(const std::string& key) {
  if (!config().enabled || supervisor_->stopped())
    return Pick{nullptr, describe_unavailable(), false};
  if (config().policy == Policy::kPerSession) return pick_per_session(key);
  return pick_shared(key);
}

// shared and pool: every member may take any call.
Upstream::Pick Upstream::pick_shared(const std::string& key) {
  const auto& members = supervisor_->members();
  candidates_.clear();
  for (const auto& m : members) candidates_.push_back(candidate(*m));
  const Situation situation{supervisor_->failing(), supervisor_->backing_off(), 0};
  const Choice choice = placement_->choose(candidates_, key, situation);
  if (choice.placed()) {
    const std::shared_ptr<Member> chosen = members[choice.member];
    if (choice.start) supervisor_->launch(std::string());  // a busy pool grows
    return Pick{supervisor_->use(chosen), {}, false};
  }
  if (choice.refused()) return Pick{nullptr, describe_unavailable(), false};
  supervisor_->wake_from_dormant();
  if (choice.start) supervisor_->launch(std::string());
  return Pick{nullptr, {}, true};
}

Upstream::Pick Upstream::pick_per_session(const std::string& key) {
  const auto now = clock_.now();
  if (auto it = bindings_.find(key); it != bindings_.end()) {
    it->second.last_used = now;
    return pick_bound(it);
  }
  // A new session: a warm spare if there is one, else an instance of its own.
  const auto& members = supervisor_->members();
  candidates_.clear();
  for (const auto& m : members) candidates_.push_back(candidate(*m));
  const bool queued = awaiting_spare_.contains(key);
  const Situation situation{supervisor_->failing(), supervisor_->backing_off(),
                            awaiting_spare_.size() - (queued ? 1 : 0)};
  const Choice choice = placement_->choose(candidates_, key, situation);
  if (choice.placed()) return bind(key, members[choice.member]);
  if (choice.refused()) return Pick{nullptr, describe_unavailable(), false};
  if (choice.queued) {
    awaiting_spare_.insert(key);
    return Pick{nullptr, {}, true};
  }
  awaiting_spare_.erase(key);
  if (choice.start)
    bindings_[key] = Binding{supervisor_->launch(key), {}, now, base::InFlight::Token(sessions_)};
  return Pick{nullptr, {}, true};
}

Upstream::Pick Upstream::pick_bound(std::unordered_map<std::string, Binding>::iterator it) {
  Binding& b = it->second;
  const config::Server& server = config();
  if (!b.lost.empty()) {
    std::string message = fmt::format(
        "this session's instance of server '{}' is gone ({}); whatever state it held is lost",
        server.name, b.lost);
    if (server.rebind_on_exit) {
      message += ". The session's next call gets a fresh instance";
      if (b.member && b.member->state != MemberState::kStopping)
        supervisor_->remove_dir(b.member->dir);
      bindings_.erase(it);
    } else {
      message += ". End the session (DELETE /mcp, or toolbridge/release) and start a new one";
    }
    return Pick{nullptr, std::move(message), false};
  }
  // Its own member takes the call, or it waits while that member starts.
  const Candidate own[] = {candidate(*b.member)};
  const Choice choice = placement_->choose(own, it->first, Situation{});
  if (choice.placed()) return Pick{supervisor_->use(b.member), {}, false};
  return Pick{nullptr, {}, true};
}

Upstream::Pick Upstream::bind(const std::string& key, const std::shared_ptr<Member>& spare) {
  awaiting_spare_.erase(key);
  spare->key = key;
  bindings_[key] = Binding{spare, {}, clock_.now(), base::InFlight::Token(sessions_)};
  spdlog::debug("[{}#{}] bound to session {}", config().name, spare->inst->number(), key);
  auto inst = supervisor_->use(spare);
  supervisor_->refill_soon();
  return Pick{std::move(inst), {}, false};
}

std::string Upstream::checkout_timeout_message(const std::string& key) const {
  const config::Server& server = config();
  const auto limit = seconds_text(server.checkout_timeout);
  if (server.policy == Policy::kPerSession && !bindings_.contains(key) &&
      supervisor_->members().size() >= server.effective_max_instances()) {
    return fmt::format(
        "server '{}' has all its max_instances ({}) bound to sessions and none was released "
        "within {} (checkout_timeout); end finished sessions (DELETE /mcp or toolbridge/release) "
        "or raise max_instances",
        server.name, server.effective_max_instances(), limit);
  }
  const std::string& last_error = supervisor_->last_error();
  return fmt::format(
      "no instance of server '{}' was ready within {} (checkout_timeout); {} starting{}",
      server.name, limit, supervisor_->starting(),
      last_error.empty() ? "" : "; last failure: " + last_error);
}

asio::awaitable<Upstream::Pick> Upstream::checkout(std::string key, Clock::time_point deadline,
                                                   WaitStop* stop) {
  for (;;) {
    Pick p = pick(key);
    if (p.instance || !p.wait) {
      if (!p.instance) awaiting_spare_.erase(key);
      co_return p;
    }
    if (stop && stop->stopped()) {
      awaiting_spare_.erase(key);
      co_return Pick{};
    }
    if (clock_.now() >= deadline) {
      awaiting_spare_.erase(key);
      co_return Pick{nullptr, checkout_timeout_message(key), false};
    }
    co_await until_changed(deadline, stop);
  }
}

asio::awaitable<void> Upstream::until_started(Clock::time_point deadline, WaitStop* stop) {
  while (!catalog() && state() == State::kStarting && clock_.now() < deadline &&
         !(stop && stop->stopped())) {
    co_await until_changed(deadline, stop);
  }
}

asio::awaitable<void> Upstream::until_changed(Clock::time_point deadline, WaitStop* stop) {
  if (clock_.now() >= deadline || (stop && stop->stopped())) co_return;
  auto t = std::make_shared<base::Timer>(io_, clock_, deadline);
  waiters_.push_back(t);
  if (stop) stop->timer_ = t;
  boost::system::error_code ec;
  co_await t->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  // Timed out or stopped rather than woken (a wake-up takes the whole list).
  if (!ec || (stop && stop->stopped())) std::erase(waiters_, t);
}

// ---------------------------------------------------------------------------------------------
// Ending bindings

std::size_t Upstream::release(const std::string& key) {
  auto it = bindings_.find(key);
  if (it == bindings_.end()) return 0;
  auto member = it->second.member;
  bindings_.erase(it);
  if (member->exited()) {
    supervisor_->remove_dir(member->dir);
  } else {
    spdlog::debug("[{}#{}] released by session {}", config().name, member->inst->number(), key);
    supervisor_->stop_member(member, true);
  }
  wake_waiters();
  return 1;
}

void Upstream::keep_bound_only() {
  supervisor_->keep_bound_only();
}

void Upstream::release_idle(Clock::time_point cutoff,
                            const std::function<bool(const std::string&)>& keep) {
  std::vector<BindingUse> uses;
  for (const auto& [key, b] : bindings_) {
    if (keep(key)) continue;
    const bool busy = b.member && !b.member->exited() && b.member->inst->in_flight() > 0;
    uses.push_back(BindingUse{key, b.last_used, busy});
  }
  for (const auto& key : expired_bindings(uses, cutoff)) {
    spdlog::debug("[{}] session {} expired after being idle", config().name, key);
    release(key);
  }
}

}  // namespace toolbridge::upstream
