#pragma once
// A place cached results are kept: memory (memory_tier.h), disk (disk_tier.h) or Redis
// (redis_tier.h). A tier never fails a call: a read that cannot be answered is a miss, a write
// that cannot be made is dropped (and counted by the tier).
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cache/entry.h"

namespace toolbridge::cache {

class Tier {
 public:
  virtual ~Tier() = default;
  virtual std::string_view name() const = 0;
  // The entry under `key` if it has not expired at `now_ms`.
  virtual boost::asio::awaitable<std::optional<Entry>> get(std::string key,
                                                           std::int64_t now_ms) = 0;
  // Stores (or replaces) the entry; returns at once, the write may finish later.
  virtual void put(const std::string& key, Entry entry, std::int64_t now_ms) = 0;
  virtual void erase(const std::string& key) = 0;
  // For the metrics: bytes held (0 where the tier cannot tell cheaply) and entries evicted
  // for room or expiry.
  virtual std::uint64_t bytes() const = 0;
  virtual std::uint64_t evictions() const = 0;
};

}  // namespace toolbridge::cache
