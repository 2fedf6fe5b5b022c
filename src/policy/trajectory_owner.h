#pragma once
// The trajectory-owner stage, for gateways behind one load balancer (gateway_id and
// shared_limits.redis set): which gateway holds a named trajectory's per_session instances is
// recorded in Redis (`OWNER:NAME` → gateway id, expiring after session_idle_ttl). The first call
// of a trajectory on this gateway claims it; if another gateway held it, the balancer moved the
// trajectory here because that gateway is gone, so the call is answered with an error naming the
// gateway and the server whose instance (and its state) was lost, and the trajectory's next call
// gets a fresh instance here. A gateway that restarted (same id, new incarnation) says the same
// of the trajectories it held before. A gateway asks Redis once per trajectory (then refreshes the
// claim every half TTL); a Redis that does not answer in time lets the call through.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/clock.h"
#include "call/stage.h"
#include "config/config.h"

namespace toolbridge::redis {
class RedisClient;
}

namespace toolbridge::policy {

class TrajectoryOwnerStage final : public call::Stage {
 public:
  TrajectoryOwnerStage(boost::asio::io_context& io, const config::Gateway& g,
                       const base::Clock& clock);
  ~TrajectoryOwnerStage() override;
  std::string_view name() const override { return "owner"; }
  bool applies(const call::Call& call) const override;
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next next) override;
  // A reload changed `shared_limits`: a new Redis address or timeout gets a new connection
  // (commands in flight finish on the old one); the trajectories claimed are claimed again there.
  void reconfigure();

  // The message of a call whose trajectory `name` was held by gateway `previous`.
  static std::string lost_message(const std::string& name, const std::string& previous,
                                  const std::string& server, const std::string& self);
  // The message of a call whose trajectory this gateway held before it restarted.
  static std::string restarted_message(const std::string& name, const std::string& server,
                                       const std::string& self);

 private:
  boost::asio::io_context& io_;
  const config::Gateway& config_;
  const base::Clock& clock_;
  std::shared_ptr<redis::RedisClient> redis_;
  config::Gateway::SharedLimits redis_for_;  // what redis_ was made from
  // What this gateway writes as a trajectory's holder: its id and this run's random incarnation,
  // so a restarted gateway (same id) also knows what it lost.
  std::string claim_;
  // Trajectories this gateway has claimed, with when the claim was last written.
  std::unordered_map<std::string, base::Clock::time_point> claimed_;
  base::Clock::time_point last_prune_{};
};

}  // namespace toolbridge::policy
