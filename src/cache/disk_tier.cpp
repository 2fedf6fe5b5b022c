#include "cache/disk_tier.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace toolbridge::cache {

namespace {

// Pages in use are kept well under the map size: LMDB needs contiguous free pages for a large
// value, and freed pages are scattered.
constexpr double kHighWater = 0.6;
constexpr double kLowWater = 0.5;

MDB_val val(std::string_view s) {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}

std::string order_key(std::int64_t stored_ms, std::string_view digest) {
  std::string k(8, '\0');
  auto v = static_cast<std::uint64_t>(stored_ms);
  for (int i = 7; i >= 0; --i) {
    k[static_cast<std::size_t>(i)] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  k.append(digest);
  return k;
}

// A read-only or read-write transaction, aborted unless committed.
class Txn {
 public:
  Txn(MDB_env* env, bool write) {
    if (mdb_txn_begin(env, nullptr, write ? 0 : MDB_RDONLY, &txn_) != 0) txn_ = nullptr;
  }
  ~Txn() {
    if (txn_) mdb_txn_abort(txn_);
  }
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  MDB_txn* get() const { return txn_; }
  int commit() {
    const int rc = mdb_txn_commit(txn_);
    txn_ = nullptr;
    return rc;
  }

 private:
  MDB_txn* txn_ = nullptr;
};

std::uint64_t pages(const MDB_stat& s) {
  return s.ms_branch_pages + s.ms_leaf_pages + s.ms_overflow_pages;
}

}  // namespace

DiskTier::DiskTier(const std::string& path, std::uint64_t max_bytes) : max_bytes_(max_bytes) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    throw std::runtime_error(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  }
  int rc = mdb_env_create(&env_);
  if (rc == 0) rc = mdb_env_set_maxdbs(env_, 2);
  if (rc == 0) rc = mdb_env_set_mapsize(env_, max_bytes);
  if (rc == 0) rc = mdb_env_open(env_, path.c_str(), MDB_NOSYNC | MDB_NOTLS, 0600);
  if (rc == 0) {
    Txn txn(env_, true);
    rc = txn.get() ? mdb_dbi_open(txn.get(), "entries", MDB_CREATE, &entries_) : EIO;
    if (rc == 0) rc = mdb_dbi_open(txn.get(), "order", MDB_CREATE, &order_);
    if (rc == 0) rc = txn.commit();
  }
  if (rc != 0) {
    if (env_) mdb_env_close(env_);
    env_ = nullptr;
    throw std::runtime_error(
        fmt::format("cannot open the LMDB cache in {}: {}", path, mdb_strerror(rc)));
  }
  // A map size written by an earlier run with a larger bound is kept by LMDB: shrink into ours.
  if (bytes() > static_cast<std::uint64_t>(kHighWater * static_cast<double>(max_bytes_))) {
    shrink(static_cast<std::uint64_t>(kLowWater * static_cast<double>(max_bytes_)));
  }
}

DiskTier::~DiskTier() {
  if (env_) {
    mdb_env_sync(env_, 1);
    mdb_env_close(env_);
  }
}

std::uint64_t DiskTier::bytes() const {
  Txn txn(env_, false);
  if (!txn.get()) return 0;
  MDB_stat a{}, b{}, env{};
  mdb_stat(txn.get(), entries_, &a);
  mdb_stat(txn.get(), order_, &b);
  mdb_env_stat(env_, &env);
  return (pages(a) + pages(b)) * env.ms_psize;
}

std::uint64_t DiskTier::entries() const {
  Txn txn(env_, false);
  if (!txn.get()) return 0;
  MDB_stat a{};
  mdb_stat(txn.get(), entries_, &a);
  return a.ms_entries;
}

std::optional<Entry> DiskTier::find(const std::string& key, std::int64_t now_ms) {
  const std::string digest = key_digest(key);
  std::optional<Entry> e;
  {
    Txn txn(env_, false);
    if (!txn.get()) return std::nullopt;
    MDB_val k = val(digest);
    MDB_val v{};
    if (mdb_get(txn.get(), entries_, &k, &v) != 0) return std::nullopt;
    e = decode_record(std::string_view(static_cast<const char*>(v.mv_data), v.mv_size), key);
  }
  if (e && e->expires_ms > now_ms) return e;
  if (e) {
    ++evictions_;
    Txn txn(env_, true);
    if (txn.get()) {
      remove(txn.get(), digest);
      txn.commit();
    }
  }
  return std::nullopt;
}

boost::asio::awaitable<std::optional<Entry>> DiskTier::get(std::string key, std::int64_t now_ms) {
  co_return find(key, now_ms);
}

void DiskTier::remove(MDB_txn* txn, const std::string& digest) {
  MDB_val k = val(digest);
  MDB_val v{};
  if (mdb_get(txn, entries_, &k, &v) != 0) return;
  // The record starts "TB1 <stored_ms> ": the order key of the entry.
  std::string_view rec(static_cast<const char*>(v.mv_data), v.mv_size);
  std::int64_t stored = 0;
  if (rec.size() > 4) {
    rec.remove_prefix(4);
    std::from_chars(rec.data(), rec.data() + rec.size(), stored);
  }
  const std::string ok = order_key(stored, digest);
  MDB_val okv = val(ok);
  mdb_del(txn, order_, &okv, nullptr);
  mdb_del(txn, entries_, &k, nullptr);
}

bool DiskTier::write(const std::string& digest, const std::string& record, std::int64_t stored_ms) {
  Txn txn(env_, true);
  if (!txn.get()) return false;
  remove(txn.get(), digest);
  MDB_val k = val(digest);
  MDB_val v = val(record);
  const std::string ok = order_key(stored_ms, digest);
  MDB_val okv = val(ok);
  MDB_val empty{0, nullptr};
  if (mdb_put(txn.get(), entries_, &k, &v, 0) != 0) return false;
  if (mdb_put(txn.get(), order_, &okv, &empty, 0) != 0) return false;
  return txn.commit() == 0;
}

void DiskTier::put(const std::string& key, Entry entry, std::int64_t now_ms) {
  if (entry.expires_ms <= now_ms) return;
  const std::string record = encode_record(key, entry);
  if (record.size() > max_bytes_ / 8) return;
  const std::string digest = key_digest(key);
  const auto high = static_cast<std::uint64_t>(kHighWater * static_cast<double>(max_bytes_));
  const auto low = static_cast<std::uint64_t>(kLowWater * static_cast<double>(max_bytes_));
  if (bytes() + record.size() > high) shrink(low);
  if (write(digest, record, entry.stored_ms)) return;
  // The map is full after all (its free pages too scattered for this value): make room once
  // more, then start afresh — a cache may forget, it must not stop storing.
  shrink(low / 2);
  if (write(digest, record, entry.stored_ms)) return;
  clear();
  if (!write(digest, record, entry.stored_ms) && failed_writes_++ % 1000 == 0) {
    spdlog::warn("cache: the disk tier could not store an entry of {} bytes ({} failed writes)",
                 record.size(), failed_writes_);
  }
}

void DiskTier::clear() {
  Txn txn(env_, true);
  if (!txn.get()) return;
  MDB_stat st{};
  mdb_stat(txn.get(), entries_, &st);
  mdb_drop(txn.get(), entries_, 0);
  mdb_drop(txn.get(), order_, 0);
  if (txn.commit() == 0) evictions_ += st.ms_entries;
}

void DiskTier::erase(const std::string& key) {
  Txn txn(env_, true);
  if (!txn.get()) return;
  remove(txn.get(), key_digest(key));
  txn.commit();
}

void DiskTier::shrink(std::uint64_t target_bytes) {
  // In batches, so one transaction stays small and bytes() sees the pages given back.
  for (int round = 0; round < 10'000 && bytes() > target_bytes; ++round) {
    Txn txn(env_, true);
    if (!txn.get()) return;
    MDB_cursor* cursor = nullptr;
    if (mdb_cursor_open(txn.get(), order_, &cursor) != 0) return;
    std::vector<std::string> oldest;
    MDB_val k{}, v{};
    for (int rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == 0 && oldest.size() < 64;
         rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
      if (k.mv_size > 8)
        oldest.emplace_back(static_cast<const char*>(k.mv_data) + 8, k.mv_size - 8);
    }
    mdb_cursor_close(cursor);
    if (oldest.empty()) return;
    for (const auto& digest : oldest) remove(txn.get(), digest);
    evictions_ += oldest.size();
    if (txn.commit() != 0) return;
  }
}

}  // namespace toolbridge::cache
