#include "upstream/upstream.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <random>

namespace toolbridge::upstream {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {
// An instance that dies sooner than this after becoming ready counts as a failed start, so a
// server that crashes right after start backs off instead of restarting in a tight loop.
constexpr auto kStableAfter = 10s;
}  // namespace

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
    case Upstream::State::kStarting: return "starting";
    case Upstream::State::kReady: return "ready";
    case Upstream::State::kBackoff: return "backoff";
    case Upstream::State::kDisabled: return "disabled";
    case Upstream::State::kStopped: return "stopped";
  }
  return "unknown";
}

Upstream::Upstream(asio::io_context& io, config::Server server, StartGate& gate,
                   telemetry::Metrics& metrics)
    : io_(io), server_(std::move(server)), gate_(gate), metrics_(metrics), retry_timer_(io) {
  if (!server_.enabled) state_ = State::kDisabled;
  // Counters exist from the start, so a dashboard sees 0 rather than no series.
  metrics_.add("toolbridge_restarts_total", telemetry::labels({{"server", server_.name}}), 0);
  metrics_.add("toolbridge_start_failures_total", telemetry::labels({{"server", server_.name}}), 0);
  metrics_.add("toolbridge_upstream_invalid_lines_total", telemetry::labels({{"server", server_.name}}), 0);
  metrics_.add("toolbridge_breaker_opened_total", telemetry::labels({{"server", server_.name}}), 0);
}

std::shared_ptr<Instance> Upstream::instance() const {
  return state_ == State::kReady && instance_ && instance_->state() == Instance::State::kReady
             ? instance_
             : nullptr;
}

double Upstream::retry_in_seconds() const {
  if (state_ != State::kBackoff) return 0;
  const auto left = retry_at_ - Instance::Clock::now();
  return std::max(0.0, std::chrono::duration<double>(left).count());
}

std::string Upstream::describe_unavailable() const {
  switch (state_) {
    case State::kStarting:
      return "server '" + server_.name + "' is starting" +
             (last_error_.empty() ? "" : " (last failure: " + last_error_ + ")") + "; retry shortly";
    case State::kBackoff:
      return fmt::format("server '{}' is unavailable: {}; next start attempt in {:.1f} s",
                         server_.name, last_error_, retry_in_seconds());
    case State::kDisabled: return "server '" + server_.name + "' is disabled in the configuration";
    case State::kStopped: return "server '" + server_.name + "' is shutting down";
    case State::kReady: return "server '" + server_.name + "' is ready";
  }
  return "server '" + server_.name + "' is unavailable";
}

asio::awaitable<void> Upstream::start() {
  if (state_ == State::kDisabled) co_return;
  // (GCC 12 mis-compiles co_await inside conditions; results go through variables.)
  const bool started = co_await attempt();
  if (!started) schedule_restart();
}

asio::awaitable<bool> Upstream::attempt() {
  auto self = shared_from_this();
  state_ = State::kStarting;
  co_await gate_.acquire();
  if (state_ == State::kStopped) {
    gate_.release();
    co_return false;
  }
  auto inst = std::make_shared<Instance>(io_, server_, ++instances_started_);
  inst->on_invalid_line = [weak = std::weak_ptr<Upstream>(self)]() {
    if (auto up = weak.lock()) {
      up->metrics_.add("toolbridge_upstream_invalid_lines_total",
                       telemetry::labels({{"server", up->server_.name}}));
    }
  };
  instance_ = inst;
  const auto began = Instance::Clock::now();
  const std::string error = co_await inst->start();
  gate_.release();
  if (state_ == State::kStopped) {
    co_await inst->stop();
    co_return false;
  }
  if (!error.empty()) {
    last_error_ = error;
    ++consecutive_failures_;
    spdlog::error("[{}] failed to start: {}", server_.name, error);
    metrics_.add("toolbridge_start_failures_total", telemetry::labels({{"server", server_.name}}));
    co_return false;
  }
  const double secs = std::chrono::duration<double>(Instance::Clock::now() - began).count();
  spdlog::info("[{}] ready in {:.0f} ms: protocol {}, {} tools, {} resources, {} prompts", server_.name,
               secs * 1000, mcp::to_string(inst->version()), inst->catalog().tools.size(),
               inst->catalog().resources.size(), inst->catalog().prompts.size());
  ready_since_ = Instance::Clock::now();
  state_ = State::kReady;
  std::weak_ptr<Upstream> weak = self;
  inst->on_exit = [weak](const std::string& reason) {
    auto up = weak.lock();
    if (!up || up->state_ == State::kStopped) return;
    up->last_error_ = reason;
    if (Instance::Clock::now() - up->ready_since_ < kStableAfter) ++up->consecutive_failures_;
    else up->consecutive_failures_ = 0;
    up->state_ = State::kStarting;
    up->schedule_restart();
  };
  inst->on_catalog_changed = [weak]() {
    if (auto up = weak.lock(); up && up->on_catalog_changed) up->on_catalog_changed();
  };
  if (on_catalog_changed) on_catalog_changed();
  co_return true;
}

std::chrono::milliseconds Upstream::backoff_delay() {
  if (consecutive_failures_ == 0) return 0ms;
  auto delay = server_.restart_backoff_initial;
  for (int i = 1; i < consecutive_failures_ && delay < server_.restart_backoff_max; ++i) delay *= 2;
  delay = std::min(delay, server_.restart_backoff_max);
  // +-20% jitter so servers that failed together do not retry in lockstep.
  thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  return std::chrono::milliseconds(static_cast<long>(static_cast<double>(delay.count()) * jitter(rng)));
}

void Upstream::schedule_restart() {
  // Single-flight: however many calls saw the failure, one restart is pending at a time.
  if (restart_scheduled_ || state_ == State::kStopped) return;
  restart_scheduled_ = true;
  const auto delay = backoff_delay();
  state_ = delay.count() > 0 ? State::kBackoff : State::kStarting;
  retry_at_ = Instance::Clock::now() + delay;
  if (delay.count() > 0) {
    spdlog::warn("[{}] next start attempt in {:.1f} s", server_.name,
                 std::chrono::duration<double>(delay).count());
  }
  asio::co_spawn(
      io_,
      [self = shared_from_this(), delay]() -> asio::awaitable<void> {
        boost::system::error_code ec;
        if (delay.count() > 0) {
          self->retry_timer_.expires_after(delay);
          co_await self->retry_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        if (auto old = self->instance_; old && old->state() != Instance::State::kExited) {
          co_await old->stop();
        }
        self->restart_scheduled_ = false;
        if (self->state_ == State::kStopped) co_return;
        ++self->restarts_;
        self->metrics_.add("toolbridge_restarts_total",
                           telemetry::labels({{"server", self->server_.name}}));
        const bool started = co_await self->attempt();
        if (!started) self->schedule_restart();
      },
      asio::detached);
}

std::string Upstream::breaker_admit() {
  if (server_.breaker_threshold == 0) return {};
  const auto now = Instance::Clock::now();
  if (breaker_ == Breaker::kOpen && now >= open_until_) {
    breaker_ = Breaker::kHalfOpen;
    probe_in_flight_ = false;
  }
  if (breaker_ == Breaker::kClosed) return {};
  // A probe that never reported (it found no instance, say) stops counting after a while.
  const auto probe_lost_after = std::max(server_.call_timeout, server_.breaker_cooldown);
  if (breaker_ == Breaker::kHalfOpen && (!probe_in_flight_ || now - probe_started_ > probe_lost_after)) {
    probe_in_flight_ = true;  // this call is the probe
    probe_started_ = now;
    return {};
  }
  const double wait = breaker_ == Breaker::kOpen
                          ? std::chrono::duration<double>(open_until_ - now).count()
                          : std::chrono::duration<double>(server_.breaker_cooldown).count();
  return fmt::format(
      "server '{}' is failing ({} calls in a row timed out; last: {}); calls "
      "are refused for {:.1f} s more, then one probe call is let through",
      server_.name, consecutive_faults_, last_fault_, wait);
}

void Upstream::breaker_record(bool fault, std::string_view why) {
  if (server_.breaker_threshold == 0) return;
  if (!fault) {
    if (breaker_ != Breaker::kClosed) spdlog::info("[{}] circuit closed: a probe call succeeded", server_.name);
    breaker_ = Breaker::kClosed;
    consecutive_faults_ = 0;
    probe_in_flight_ = false;
    cooldown_ = server_.breaker_cooldown;
    return;
  }
  ++consecutive_faults_;
  last_fault_ = std::string(why.substr(0, 300));
  const bool reopen = breaker_ == Breaker::kHalfOpen;
  if (reopen || (breaker_ == Breaker::kClosed && consecutive_faults_ >= server_.breaker_threshold)) {
    // Each failed probe doubles the wait, up to 8x the configured cooldown.
    cooldown_ = reopen ? std::min(cooldown_ * 2, server_.breaker_cooldown * 8) : server_.breaker_cooldown;
    breaker_ = Breaker::kOpen;
    probe_in_flight_ = false;
    open_until_ = Instance::Clock::now() + cooldown_;
    spdlog::warn("[{}] circuit open for {} ms after {} failing calls: {}", server_.name,
                 cooldown_.count(), consecutive_faults_, last_fault_);
    metrics_.add("toolbridge_breaker_opened_total", telemetry::labels({{"server", server_.name}}));
  }
}

std::string_view Upstream::breaker_state() const {
  switch (breaker_) {
    case Breaker::kClosed: return "closed";
    case Breaker::kOpen: return "open";
    case Breaker::kHalfOpen: return "half_open";
  }
  return "closed";
}

asio::awaitable<void> Upstream::stop() {
  state_ = State::kStopped;
  retry_timer_.cancel();
  if (instance_) co_await instance_->stop();
}

}  // namespace toolbridge::upstream
