#include "policy/shared_rate.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "redis/redis_client.h"
#include "transport/session_id.h"

namespace toolbridge::policy {

namespace {

using std::chrono::milliseconds;

// One second's sliding window per tenant, by Redis's clock: drop what is older, admit if there
// is room (answer 0), else answer the milliseconds until the oldest entry leaves the window.
constexpr const char* kWindowScript = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 1000)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now, ARGV[2])
  redis.call('PEXPIRE', KEYS[1], 2000)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = tonumber(oldest[2]) + 1000 - now
if wait < 1 then wait = 1 end
return wait
)lua";

}  // namespace

milliseconds LocalWindow::admit(base::Clock::time_point now, std::size_t rate) {
  const auto window = std::chrono::seconds(1);
  while (!starts_.empty() && starts_.front() <= now - window) starts_.pop_front();
  if (starts_.size() < rate) {
    starts_.push_back(now);
    return milliseconds(0);
  }
  const auto wait = std::chrono::ceil<milliseconds>(starts_.front() + window - now);
  return std::max(wait, milliseconds(1));
}

SharedRateStage::SharedRateStage(boost::asio::io_context& io, const config::Gateway& g,
                                 telemetry::Metrics& metrics, const base::Clock& clock)
    : io_(io), config_(g), clock_(clock) {
  reconfigure();
  member_prefix_ = (g.gateway_id.empty() ? std::to_string(::getpid()) : g.gateway_id) + "." +
                   transport::random_session_id().substr(0, 8) + ".";
  const char* help =
      "Calls shed because their tenant was over its rate (tenants.NAME.rate, tenant_rate): "
      "counted across gateways in Redis (shared) or by this gateway alone (local).";
  metrics.describe("toolbridge_rate_shed_total", "counter", help);
  shed_shared_ = &metrics.counter_cell("toolbridge_rate_shed_total", R"(window="shared")");
  shed_local_ = &metrics.counter_cell("toolbridge_rate_shed_total", R"(window="local")");
  metrics.describe("toolbridge_rate_local_fallbacks_total", "counter",
                   "Rate decisions made by this gateway alone because Redis (shared_limits) did "
                   "not answer within its timeout.");
  fallbacks_ = &metrics.counter_cell("toolbridge_rate_local_fallbacks_total", "");
}

SharedRateStage::~SharedRateStage() = default;

void SharedRateStage::reconfigure() {
  const config::Gateway& g = config_;
  any_rate_ = g.tenant_rate > 0;
  for (const auto& [name, t] : g.tenants) any_rate_ = any_rate_ || t.rate > 0;
  const auto& shared = g.shared_limits;
  if (!any_rate_ || shared.address.empty()) {
    redis_.reset();
    return;
  }
  if (redis_ && redis_for_.address == shared.address && redis_for_.timeout == shared.timeout)
    return;
  redis_ = redis::RedisClient::at(io_, clock_, shared.address, shared.timeout);
  redis_for_ = shared;
}

std::size_t SharedRateStage::rate_of(const std::string& tenant) const {
  const auto it = config_.tenants.find(tenant);
  if (it != config_.tenants.end() && it->second.rate > 0) return it->second.rate;
  return config_.tenant_rate;
}

boost::asio::awaitable<milliseconds> SharedRateStage::admit(const std::string& tenant,
                                                            std::size_t rate) {
  if (const std::shared_ptr<redis::RedisClient> redis = redis_) {
    std::vector<std::string> argv{"EVAL",
                                  kWindowScript,
                                  "1",
                                  config_.shared_limits.key_prefix + "rate:" + tenant,
                                  std::to_string(rate),
                                  member_prefix_ + std::to_string(++next_member_)};
    std::optional<redis::RedisReply> reply = co_await redis->command(std::move(argv));
    if (reply && reply->type == redis::RedisReply::Type::kInteger) {
      if (reply->integer > 0) ++*shed_shared_;
      co_return milliseconds(reply->integer);
    }
    if (reply && reply->type == redis::RedisReply::Type::kError) {
      spdlog::warn("shared_limits: Redis refused the rate script: {}", reply->text);
    }
    ++*fallbacks_;
  }
  const milliseconds wait = local_[tenant].admit(clock_.now(), rate);
  if (wait.count() > 0) ++*shed_local_;
  co_return wait;
}

boost::asio::awaitable<call::Result> SharedRateStage::handle(call::Call& call, call::Next next) {
  const std::size_t rate = rate_of(call.tenant);
  const milliseconds wait = co_await admit(call.tenant, rate);
  if (wait.count() == 0) {
    call::Result result = co_await next(call);
    co_return result;
  }
  const std::string key = config_.tenants.contains(call.tenant)
                              ? fmt::format("tenants.{}.rate", call.tenant)
                              : std::string("tenant_rate");
  std::string why = fmt::format(
      "tenant '{}' is over its rate of {} calls per second across all gateways ({}); retry in "
      "~{} ms",
      call.tenant, rate, key, wait.count());
  co_return call::Result::failure(call::Fault::kShed, std::move(why));
}

}  // namespace toolbridge::policy
