#include "base/clock.h"

#include <algorithm>

namespace toolbridge::base {

const Clock& steady_clock() {
  static const SteadyClock clock;
  return clock;
}

Clock::wall_time_point Clock::wall_now() const {
  if (!manual_) return std::chrono::system_clock::now();
  return manual_->wall_start_ +
         std::chrono::duration_cast<wall_time_point::duration>(manual_now_ - manual_->start_);
}

void Timer::bind(const ManualClock& clock, time_point expiry) {
  manual_ = std::make_unique<detail::ManualWaits>(detail::ManualWaits{&clock, expiry, {}, &timer_});
  clock.timers_.push_back(manual_.get());
}

Timer::~Timer() {
  if (!manual_ || !manual_->clock) return;
  auto& timers = manual_->clock->timers_;
  timers.erase(std::find(timers.begin(), timers.end(), manual_.get()));
}

Timer::time_point Timer::expiry() const {
  return manual_ ? manual_->expiry : timer_.expiry();
}

std::size_t Timer::expires_at(time_point t) {
  if (!manual_) return timer_.expires_at(t);
  manual_->expiry = t;
  return cancel();
}

std::size_t Timer::expires_after(duration d) {
  if (!manual_) return timer_.expires_after(d);
  return expires_at(manual_->clock ? manual_->clock->now() + d : never());
}

std::size_t Timer::cancel() {
  if (!manual_) return timer_.cancel();
  manual_->waits.clear();  // their flags stay false: the waits end with operation_aborted
  return timer_.cancel();
}

std::shared_ptr<bool> Timer::start_manual_wait() {
  const bool due = manual_->clock && manual_->expiry <= manual_->clock->now();
  auto fired = std::make_shared<bool>(due);
  if (!due) manual_->waits.push_back(fired);
  return fired;
}

void Timer::finish_start() {
  // The wait just started is due: complete it (and no other: any other wait in progress was
  // due as well and has been fired already).
  timer_.cancel();
}

ManualClock::ManualClock(time_point start)
    : start_(start),
      // A fixed date, so logs and traces written under simulated time are the same every run.
      wall_start_(std::chrono::sys_days{std::chrono::year{2026} / 1 / 1}) {
  manual_ = this;
  manual_now_ = start;
}

ManualClock::~ManualClock() {
  for (auto* t : timers_) t->clock = nullptr;  // those timers now never expire
}

void ManualClock::set(time_point t) {
  manual_now_ = t;
  std::vector<detail::ManualWaits*> due;
  for (auto* w : timers_)
    if (!w->waits.empty() && w->expiry <= t) due.push_back(w);
  std::stable_sort(due.begin(), due.end(),
                   [](const auto* a, const auto* b) { return a->expiry < b->expiry; });
  for (auto* w : due) {
    for (auto& fired : w->waits) *fired = true;
    w->waits.clear();
    w->timer->cancel();
  }
}

std::size_t ManualClock::timers_waiting() const {
  return static_cast<std::size_t>(std::count_if(timers_.begin(), timers_.end(),
                                                [](const auto* w) { return !w->waits.empty(); }));
}

}  // namespace toolbridge::base
