#pragma once
// The memory tier: an LRU bounded in bytes (key + result + a fixed overhead per entry). An entry
// larger than an eighth of the budget is not kept: one huge result must not empty the cache.
#include <list>
#include <unordered_map>

#include "cache/tier.h"

namespace toolbridge::cache {

class MemoryTier final : public Tier {
 public:
  explicit MemoryTier(std::uint64_t max_bytes) : max_bytes_(max_bytes) {}

  std::string_view name() const override { return "memory"; }
  boost::asio::awaitable<std::optional<Entry>> get(std::string key, std::int64_t now_ms) override;
  void put(const std::string& key, Entry entry, std::int64_t now_ms) override;
  void erase(const std::string& key) override;
  std::uint64_t bytes() const override { return bytes_; }
  std::uint64_t evictions() const override { return evictions_; }

  // The synchronous core of get(): the entry, made most recently used; null if absent or
  // expired (an expired entry is dropped).
  const Entry* find(const std::string& key, std::int64_t now_ms);
  std::size_t size() const { return index_.size(); }

 private:
  struct Node {
    std::string key;
    Entry entry;
    std::uint64_t bytes = 0;
  };
  using List = std::list<Node>;
  void drop(List::iterator it);

  std::uint64_t max_bytes_;
  std::uint64_t bytes_ = 0;
  std::uint64_t evictions_ = 0;
  List lru_;                                                    // most recently used first
  std::unordered_map<std::string_view, List::iterator> index_;  // views into the nodes' keys
};

}  // namespace toolbridge::cache
