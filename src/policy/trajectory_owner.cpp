#include "policy/trajectory_owner.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "redis/redis_client.h"
#include "transport/session_id.h"
#include "upstream/upstream.h"

namespace toolbridge::policy {

TrajectoryOwnerStage::TrajectoryOwnerStage(boost::asio::io_context& io, const config::Gateway& g,
                                           const base::Clock& clock)
    : io_(io), config_(g), clock_(clock) {
  if (!g.gateway_id.empty())
    claim_ = g.gateway_id + "#" + transport::random_session_id().substr(0, 12);
  reconfigure();
}

TrajectoryOwnerStage::~TrajectoryOwnerStage() = default;

void TrajectoryOwnerStage::reconfigure() {
  const auto& shared = config_.shared_limits;
  if (config_.gateway_id.empty() || shared.address.empty()) {
    redis_.reset();
    return;
  }
  if (redis_ && redis_for_.address == shared.address && redis_for_.timeout == shared.timeout &&
      redis_for_.key_prefix == shared.key_prefix)
    return;
  redis_ = redis::RedisClient::at(io_, clock_, shared.address, shared.timeout);
  redis_for_ = shared;
  claimed_.clear();  // another Redis (or prefix) has none of them
}

bool TrajectoryOwnerStage::applies(const call::Call& call) const {
  if (!redis_ || !call.route.upstream) return false;
  if (call.route.upstream->config().policy != config::Policy::kPerSession) return false;
  const auto it = claimed_.find(call.trajectory);
  return it == claimed_.end() || clock_.now() - it->second > config_.session_idle_ttl / 2;
}

std::string TrajectoryOwnerStage::lost_message(const std::string& name, const std::string& previous,
                                               const std::string& server, const std::string& self) {
  return fmt::format(
      "trajectory '{}' was held by gateway '{}', which is gone (the load balancer sent this call "
      "to gateway '{}'): its per_session instance of server '{}' and that instance's state are "
      "lost. The trajectory's next call starts a fresh instance on gateway '{}'",
      name, previous, self, server, self);
}

std::string TrajectoryOwnerStage::restarted_message(const std::string& name,
                                                    const std::string& server,
                                                    const std::string& self) {
  return fmt::format(
      "trajectory '{}' was held by this gateway ('{}') before it restarted: its per_session "
      "instance of server '{}' and that instance's state are lost. The trajectory's next call "
      "starts a fresh instance",
      name, self, server);
}

boost::asio::awaitable<call::Result> TrajectoryOwnerStage::handle(call::Call& call,
                                                                  call::Next next) {
  const auto now = clock_.now();
  const auto ttl = std::chrono::duration_cast<std::chrono::milliseconds>(config_.session_idle_ttl);
  const std::string& self = config_.gateway_id;
  std::vector<std::string> argv{"SET",
                                config_.shared_limits.key_prefix + "owner:" + call.trajectory,
                                claim_,
                                "PX",
                                std::to_string(ttl.count()),
                                "GET"};
  const std::shared_ptr<redis::RedisClient> redis = redis_;  // a reload may replace redis_
  std::optional<redis::RedisReply> reply;
  if (redis) reply = co_await redis->command(std::move(argv));
  if (!reply) {  // Redis down or slow: nothing to tell
    call::Result result = co_await next(call);
    co_return result;
  }
  if (now - last_prune_ > config_.session_idle_ttl) {
    last_prune_ = now;
    std::erase_if(claimed_,
                  [&](const auto& e) { return now - e.second > config_.session_idle_ttl; });
  }
  claimed_[call.trajectory] = now;
  // The value is "GATEWAY#INCARNATION": another gateway, or this one before a restart.
  const bool held = reply->type == redis::RedisReply::Type::kString && reply->text != claim_;
  if (!held) {
    call::Result result = co_await next(call);
    co_return result;
  }
  const std::string previous = reply->text.substr(0, reply->text.find('#'));
  spdlog::warn("trajectory '{}' was held by gateway '{}'{}: its per_session state is lost",
               call.trajectory, previous, previous == self ? " before it restarted" : " (gone)");
  std::string why = previous == self
                        ? restarted_message(call.trajectory, call.route.server, self)
                        : lost_message(call.trajectory, previous, call.route.server, self);
  co_return call::Result::failure(call::Fault::kUnavailable, std::move(why));
}

}  // namespace toolbridge::policy
