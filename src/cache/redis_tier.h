#pragma once
// The Redis tier: entries in a redis-server shared by several gateways, under
// key_prefix + SHA-256(key), each with Redis's own expiry (SET ... PX ttl); the record holds the
// key, so a read never returns another call's result. Bounded by the server's own maxmemory
// policy. A Redis that is down or slow is a miss within gateway.cache.redis.timeout
// (redis_client.h), never a failed or hung call.
#include "cache/tier.h"
#include "redis/redis_client.h"

namespace toolbridge::cache {

class RedisTier final : public Tier {
 public:
  RedisTier(boost::asio::io_context& io, const base::Clock& clock, const std::string& host,
            unsigned short port, std::chrono::milliseconds timeout, std::string prefix);

  std::string_view name() const override { return "redis"; }
  boost::asio::awaitable<std::optional<Entry>> get(std::string key, std::int64_t now_ms) override;
  void put(const std::string& key, Entry entry, std::int64_t now_ms) override;
  void erase(const std::string& key) override;
  // The server's used_memory, read at most every 10 s when the tier is used.
  std::uint64_t bytes() const override { return used_memory_; }
  std::uint64_t evictions() const override { return 0; }  // Redis expires entries itself
  std::uint64_t failures() const { return client_.failures(); }

 private:
  redis::RedisClient client_;
  std::string prefix_;
  std::uint64_t used_memory_ = 0;
  std::int64_t memory_read_ms_ = 0;
};

}  // namespace toolbridge::cache
