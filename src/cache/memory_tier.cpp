#include "cache/memory_tier.h"

namespace toolbridge::cache {

namespace {
constexpr std::uint64_t kNodeOverhead = 96;  // list node, index slot, header of the strings
}

const Entry* MemoryTier::find(const std::string& key, std::int64_t now_ms) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  if (it->second->entry.expires_ms <= now_ms) {
    ++evictions_;
    drop(it->second);
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  return &it->second->entry;
}

boost::asio::awaitable<std::optional<Entry>> MemoryTier::get(std::string key, std::int64_t now_ms) {
  const Entry* e = find(key, now_ms);
  if (!e) co_return std::nullopt;
  co_return *e;
}

void MemoryTier::put(const std::string& key, Entry entry, std::int64_t now_ms) {
  const std::uint64_t size = key.size() + entry.result.size() + kNodeOverhead;
  if (auto it = index_.find(key); it != index_.end()) drop(it->second);
  if (size > max_bytes_ / 8 || entry.expires_ms <= now_ms) return;
  lru_.push_front(Node{key, std::move(entry), size});
  index_.emplace(lru_.front().key, lru_.begin());
  bytes_ += size;
  while (bytes_ > max_bytes_ && !lru_.empty()) {
    ++evictions_;
    drop(std::prev(lru_.end()));
  }
}

void MemoryTier::erase(const std::string& key) {
  if (auto it = index_.find(key); it != index_.end()) drop(it->second);
}

void MemoryTier::drop(List::iterator it) {
  bytes_ -= it->bytes;
  index_.erase(it->key);
  lru_.erase(it);
}

}  // namespace toolbridge::cache
