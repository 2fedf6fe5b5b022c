#include "policy/breaker.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace toolbridge::policy {

std::string Breaker::admit() {
  if (!enabled() || state_ == State::kClosed) return {};  // the usual case reads no clock
  const auto now = clock_->now();
  if (state_ == State::kOpen && now >= open_until_) {
    state_ = State::kHalfOpen;
    probe_in_flight_ = false;
  }
  if (state_ == State::kClosed) return {};
  if (state_ == State::kHalfOpen &&
      (!probe_in_flight_ || now - probe_started_ > options_.probe_lost_after)) {
    probe_in_flight_ = true;  // this call is the probe
    probe_started_ = now;
    return {};
  }
  const double wait = state_ == State::kOpen
                          ? std::chrono::duration<double>(open_until_ - now).count()
                          : std::chrono::duration<double>(options_.cooldown).count();
  return fmt::format(
      "server '{}' is failing ({} calls in a row timed out; last: {}); calls "
      "are refused for {:.1f} s more, then one probe call is let through",
      server_, consecutive_faults_, last_fault_, wait);
}

void Breaker::record(bool fault, std::string_view why) {
  if (!enabled()) return;
  if (!fault) {
    if (state_ != State::kClosed)
      spdlog::info("[{}] circuit closed: a probe call succeeded", server_);
    state_ = State::kClosed;
    consecutive_faults_ = 0;
    probe_in_flight_ = false;
    cooldown_ = options_.cooldown;
    return;
  }
  ++consecutive_faults_;
  last_fault_ = std::string(why.substr(0, 300));
  const bool reopen = state_ == State::kHalfOpen;
  if (reopen || (state_ == State::kClosed && consecutive_faults_ >= options_.threshold)) {
    // Each failed probe doubles the wait, up to 8x the configured cooldown.
    cooldown_ = reopen ? std::min(cooldown_ * 2, options_.cooldown * 8) : options_.cooldown;
    state_ = State::kOpen;
    probe_in_flight_ = false;
    open_until_ = clock_->now() + cooldown_;
    spdlog::warn("[{}] circuit open for {} ms after {} failing calls: {}", server_,
                 cooldown_.count(), consecutive_faults_, last_fault_);
    if (on_open) on_open();
  }
}

void Breaker::release_probe() {
  if (state_ == State::kHalfOpen) probe_in_flight_ = false;
}

std::string_view Breaker::state_name() const {
  switch (state_) {
    case State::kClosed:
      return "closed";
    case State::kOpen:
      return "open";
    case State::kHalfOpen:
      return "half_open";
  }
  return "closed";
}

}  // namespace toolbridge::policy
