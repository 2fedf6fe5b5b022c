#pragma once
// What the result cache stores for one call, and the key it is stored under.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"

namespace toolbridge::cache {

// Whose calls share cached results (config `scope`): every caller, one tenant, one trajectory.
using Scope = config::CacheScope;

struct Entry {
  static constexpr std::size_t kAsSent = std::size_t(-1);

  // Raw JSON of the tools/call result object, as the server sent it; or, when `meta_hole` is
  // set, the result laid out for answering hits (cache_meta.h: the text of with_cache_meta with
  // the hit's info left out at offset `meta_hole`). Only the memory tier keeps laid-out entries;
  // the disk and Redis tiers store results as sent.
  std::string result;
  std::int64_t stored_ms = 0;   // wall clock (Unix ms): survives restarts, shared across gateways
  std::int64_t expires_ms = 0;  // stored_ms + ttl
  double upstream_seconds = 0;  // what the call cost upstream: the time a hit saves
  std::size_t meta_hole = kAsSent;
  std::size_t bytes() const { return result.size() + 64; }
};

// The cache key of a call: server, tool, who shares it (by scope), and the canonical arguments,
// each length-prefixed so no two different calls can write the same key.
std::string make_key(std::string_view server, std::string_view tool, Scope scope,
                     std::string_view tenant, std::string_view trajectory,
                     std::string_view canonical_arguments);
// make_key of the canonical form of `arguments` (raw JSON, canonical.h), written straight into
// the key; empty if the arguments have no canonical form.
std::string make_key_of_arguments(std::string_view server, std::string_view tool, Scope scope,
                                  std::string_view tenant, std::string_view trajectory,
                                  std::string_view arguments);

// SHA-256 of the key in hex: the name of an entry in the disk and Redis tiers (the key itself is
// stored with the entry and compared on read).
std::string key_digest(std::string_view key);

// The record a disk or Redis tier stores: a small text header, the key, then the result.
std::string encode_record(std::string_view key, const Entry& e);
// The entry of `record` if it is well formed and stored under `key`.
std::optional<Entry> decode_record(std::string_view record, std::string_view key);

}  // namespace toolbridge::cache
