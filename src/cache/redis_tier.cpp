#include "cache/redis_tier.h"

#include <charconv>

namespace toolbridge::cache {

namespace {
constexpr std::int64_t kMemoryReadInterval = 10'000;
}

RedisTier::RedisTier(boost::asio::io_context& io, const base::Clock& clock, const std::string& host,
                     unsigned short port, std::chrono::milliseconds timeout, std::string prefix)
    : client_(io, clock, host, port, timeout), prefix_(std::move(prefix)) {}

boost::asio::awaitable<std::optional<Entry>> RedisTier::get(std::string key, std::int64_t now_ms) {
  std::vector<std::string> argv{"GET", prefix_ + key_digest(key)};
  std::optional<redis::RedisReply> reply = co_await client_.command(std::move(argv));
  if (!reply) co_return std::nullopt;
  if (now_ms - memory_read_ms_ >= kMemoryReadInterval) {
    memory_read_ms_ = now_ms;
    std::vector<std::string> info{"INFO", "memory"};
    std::optional<redis::RedisReply> memory = co_await client_.command(std::move(info));
    if (memory && memory->type == redis::RedisReply::Type::kString) {
      const std::string_view text = memory->text;
      const std::size_t at = text.find("used_memory:");
      if (at != std::string_view::npos) {
        const std::string_view digits = text.substr(at + 12);
        std::from_chars(digits.data(), digits.data() + digits.size(), used_memory_);
      }
    }
  }
  if (reply->type != redis::RedisReply::Type::kString) co_return std::nullopt;
  std::optional<Entry> e = decode_record(reply->text, key);
  if (!e || e->expires_ms <= now_ms) co_return std::nullopt;
  co_return e;
}

void RedisTier::put(const std::string& key, Entry entry, std::int64_t now_ms) {
  const std::int64_t ttl = entry.expires_ms - now_ms;
  if (ttl <= 0) return;
  client_.send(
      {"SET", prefix_ + key_digest(key), encode_record(key, entry), "PX", std::to_string(ttl)});
}

void RedisTier::erase(const std::string& key) {
  client_.send({"DEL", prefix_ + key_digest(key)});
}

}  // namespace toolbridge::cache
