#include "policy/breaker_stage.h"

#include <algorithm>

namespace toolbridge::policy {

using call::Fault;

namespace {

BreakerOptions options_of(const config::Server& s) {
  return BreakerOptions{s.breaker_threshold, s.breaker_cooldown,
                        std::max<std::chrono::milliseconds>(s.call_timeout, s.breaker_cooldown)};
}

bool same(const BreakerOptions& a, const BreakerOptions& b) {
  return a.threshold == b.threshold && a.cooldown == b.cooldown &&
         a.probe_lost_after == b.probe_lost_after;
}

}  // namespace

BreakerStage::BreakerStage(const std::vector<config::Server>& servers, telemetry::Metrics& metrics,
                           const base::Clock& clock)
    : metrics_(metrics), clock_(clock) {
  for (const auto& s : servers) breakers_.emplace(s.name, make_breaker(s));
}

std::unique_ptr<Breaker> BreakerStage::make_breaker(const config::Server& s) const {
  auto breaker = std::make_unique<Breaker>(s.name, options_of(s), clock_);
  const std::string labels = telemetry::labels({{"server", s.name}});
  // The counter exists from the start, so a dashboard sees 0 rather than no series.
  metrics_.add("toolbridge_breaker_opened_total", labels, 0);
  breaker->on_open = [&metrics = metrics_, labels] {
    metrics.add("toolbridge_breaker_opened_total", labels);
  };
  return breaker;
}

void BreakerStage::set_servers(const std::vector<config::Server>& servers) {
  std::unordered_map<std::string, std::unique_ptr<Breaker>> next;
  for (const auto& s : servers) {
    auto it = breakers_.find(s.name);
    if (it != breakers_.end() && same(it->second->options(), options_of(s))) {
      next.emplace(s.name, std::move(it->second));
    } else {
      next.emplace(s.name, make_breaker(s));
    }
  }
  for (auto& [name, breaker] : breakers_) {
    if (breaker) replaced_.push_back(std::move(breaker));
  }
  breakers_ = std::move(next);
}

const Breaker* BreakerStage::find(const std::string& server) const {
  auto it = breakers_.find(server);
  return it == breakers_.end() ? nullptr : it->second.get();
}

bool BreakerStage::applies(const call::Call& call) const {
  const Breaker* b = find(call.route.server);
  return b && b->enabled();
}

boost::asio::awaitable<call::Result> BreakerStage::handle(call::Call& call, call::Next next) {
  Breaker& breaker = *breakers_.at(call.route.server);
  if (std::string refused = breaker.admit(); !refused.empty()) {
    co_return call::Result::failure(Fault::kUnavailable, std::move(refused));
  }
  const bool probe = breaker.state() == Breaker::State::kHalfOpen;
  const int sends = call.sends;
  call::Result result = co_await next(call);
  if (call.sends == sends) {
    // Never handed to an instance (its deadline passed while it queued for a permit or an
    // instance): that says nothing of the server. Counted, a burst that outwaits admission
    // opened the breaker and refused every call to a healthy server for its cooldown.
    if (probe) breaker.release_probe();
    co_return result;
  }
  const std::string_view outcome = call::outcome_label(result.fault);
  if (outcome != "unavailable" && outcome != "crashed" && outcome != "cancelled") {
    breaker.record(result.fault == Fault::kTimeout, result.why);
  }
  co_return result;
}

}  // namespace toolbridge::policy
