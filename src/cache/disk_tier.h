#pragma once
// The disk tier: an LMDB environment in a directory (gateway.cache.disk.path), kept across
// gateway restarts and shared by gateways on one machine. Bounded in bytes: LMDB's map size is
// max_bytes, and when the pages in use pass 60% of it the oldest-stored entries are removed
// until 50% (headroom for LMDB's scattered free pages; if a write still finds no room the tier
// starts afresh) (an index by store time makes that one cursor walk). Expired entries are removed
// when read, or when their turn comes as the oldest. Entries are named by the SHA-256 of their
// key and hold the key, so a read never returns another call's result. Writes skip fsync
// (MDB_NOSYNC; synced at close): a cache may lose its last entries to a power cut, never its
// consistency.
#include <lmdb.h>

#include <memory>

#include "cache/tier.h"

namespace toolbridge::cache {

class DiskTier final : public Tier {
 public:
  // Opens (creating) the environment; throws std::runtime_error with the reason if it cannot.
  DiskTier(const std::string& path, std::uint64_t max_bytes);
  ~DiskTier() override;

  std::string_view name() const override { return "disk"; }
  boost::asio::awaitable<std::optional<Entry>> get(std::string key, std::int64_t now_ms) override;
  void put(const std::string& key, Entry entry, std::int64_t now_ms) override;
  void erase(const std::string& key) override;
  std::uint64_t bytes() const override;
  std::uint64_t evictions() const override { return evictions_; }

  std::optional<Entry> find(const std::string& key, std::int64_t now_ms);
  std::uint64_t entries() const;

 private:
  bool write(const std::string& digest, const std::string& record, std::int64_t stored_ms);
  void remove(MDB_txn* txn, const std::string& digest);
  void shrink(std::uint64_t target_bytes);
  void clear();

  MDB_env* env_ = nullptr;
  MDB_dbi entries_ = 0;  // digest -> record
  MDB_dbi order_ = 0;    // 8-byte big-endian stored_ms + digest -> (empty)
  std::uint64_t max_bytes_;
  std::uint64_t evictions_ = 0;
  std::uint64_t failed_writes_ = 0;
};

}  // namespace toolbridge::cache
