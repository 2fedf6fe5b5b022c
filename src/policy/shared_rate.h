#pragma once
// The shared-rate stage: a tenant's calls per second (`tenants.NAME.rate`, `tenant_rate`)
// counted across every gateway that shares one Redis (`shared_limits`). A sliding window of one
// second kept in Redis (a sorted set per tenant, updated by one script with Redis's own clock,
// so the gateways' clocks do not matter); a call over the rate is shed at once with when to
// retry. When Redis does not answer within `shared_limits.timeout` (or no Redis is configured),
// the same window is kept in this gateway alone: each gateway then enforces the full rate, so
// the budget degrades to N times the rate for N gateways, never to no limit and never to a hang.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/clock.h"
#include "call/stage.h"
#include "config/config.h"
#include "telemetry/metrics.h"

namespace toolbridge::redis {
class RedisClient;
}

namespace toolbridge::policy {

// The sliding window of one tenant kept locally: start times of the calls of the last second.
class LocalWindow {
 public:
  // 0 if a call may start at `now` (and it is counted), else how long until one may.
  std::chrono::milliseconds admit(base::Clock::time_point now, std::size_t rate);

 private:
  std::deque<base::Clock::time_point> starts_;
};

class SharedRateStage final : public call::Stage {
 public:
  SharedRateStage(boost::asio::io_context& io, const config::Gateway& g,
                  telemetry::Metrics& metrics, const base::Clock& clock);
  ~SharedRateStage() override;
  std::string_view name() const override { return "shared_rate"; }
  bool applies(const call::Call& call) const override {
    return any_rate_ && rate_of(call.tenant) > 0;
  }
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next next) override;

  std::size_t rate_of(const std::string& tenant) const;
  // A reload changed the gateway section this stage reads (`tenants`, `tenant_rate`,
  // `shared_limits`): rates apply from the next call on, each tenant's local window (its calls of
  // the last second) is kept, and a changed Redis address or timeout gets a new connection
  // (commands in flight finish on the old one).
  void reconfigure();
  // How long `tenant` must wait before its next call (0: admitted and counted): from Redis when
  // it answers, else from the local window.
  boost::asio::awaitable<std::chrono::milliseconds> admit(const std::string& tenant,
                                                          std::size_t rate);

 private:
  boost::asio::io_context& io_;
  const config::Gateway& config_;
  const base::Clock& clock_;
  bool any_rate_ = false;
  // Shared with the calls waiting on it, so that a reload may replace it meanwhile.
  std::shared_ptr<redis::RedisClient> redis_;
  config::Gateway::SharedLimits redis_for_;  // what redis_ was made from
  std::string member_prefix_;  // unique per gateway process: window entries never collide
  std::uint64_t next_member_ = 0;
  std::unordered_map<std::string, LocalWindow> local_;
  std::uint64_t* shed_shared_ = nullptr;
  std::uint64_t* shed_local_ = nullptr;
  std::uint64_t* fallbacks_ = nullptr;
};

}  // namespace toolbridge::policy
