#pragma once
// The cache stage (after repair, before admission: a hit takes no admission slot). For the tools
// the config caches (a server's `cache:`), a call is answered from the tier its config names when
// an entry of its key has not expired; otherwise it runs, and a result that is not an error is
// stored. Identical calls in flight at once share one execution (coalescer.h) for cached tools
// and for tools declared idempotent. The caller may bypass or refresh the cache, or bound the
// age of what it accepts (_meta["toolbridge/cache"]); a result from the cache says so in its
// _meta (hit, tier, age_ms).
#include <array>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/clock.h"
#include "cache/coalescer.h"
#include "cache/memory_tier.h"
#include "cache/tier.h"
#include "call/stage.h"
#include "catalog/catalog.h"
#include "config/config.h"
#include "telemetry/metrics.h"

namespace toolbridge::cache {

// What the stage does with one call.
struct Plan {
  const config::ToolCache* cache = nullptr;  // null: not cached (may still be coalesced)
  bool coalesce = false;
  Scope scope = Scope::kGlobal;  // who shares a key
};

class CacheStage final : public call::Stage {
 public:
  CacheStage(boost::asio::io_context& io, const config::Config& config,
             const catalog::Catalog& catalog, telemetry::Metrics& metrics,
             const base::Clock& clock);
  ~CacheStage() override;

  // A reload replaced the servers: their cache settings are those of `servers` from now on
  // (entries already stored stay, under their keys).
  void set_servers(const std::vector<config::Server>& servers);

  std::string_view name() const override { return "cache"; }
  bool applies(const call::Call& call) const override;
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next next) override;

  Plan plan(const call::Call& call) const;
  // The key of `call` under `plan`; empty if its arguments have no canonical form.
  static std::string key(const call::Call& call, const Plan& plan);

  MemoryTier& memory() { return *memory_; }

 private:
  struct ServerPolicy {
    const config::Server* server = nullptr;
    bool idempotent_all = false;
    config::ToolCache annotated;  // a readOnlyHint tool's settings when annotations are on
  };
  boost::asio::awaitable<call::Result> run(call::Call& call, call::Next next, Plan plan,
                                           std::string key, bool looked_up);
  // The answer from a cached entry, with _meta["toolbridge/cache"] {hit, tier, age_ms}.
  call::Result hit(const call::Call& call, const Entry& e, const Tier& tier, std::int64_t now_ms);
  Tier* tier_for(config::CacheTier t) const;
  std::array<const Tier*, 3> tiers() const { return {memory_.get(), disk_.get(), redis_.get()}; }
  void store(const call::Call& call, const Plan& plan, const std::string& key,
             const call::Result& r, double upstream_seconds);
  enum class Counter { kHitMemory, kHitDisk, kHitRedis, kMiss, kCoalesced, kCount };
  void count(Counter which, const call::Call& call);

  const catalog::Catalog& catalog_;
  telemetry::Metrics& metrics_;
  const base::Clock& clock_;  // entry ages and expiry are wall time (entries outlive a process)
  const config::CacheStore store_;
  std::unordered_map<std::string, ServerPolicy> servers_;
  std::unique_ptr<MemoryTier> memory_;
  std::unique_ptr<Tier> disk_;
  std::unique_ptr<Tier> redis_;
  Coalescer coalescer_;
  double seconds_saved_ = 0;
  // Per tool (its display name): the metric cells of its hits, misses and shared calls.
  using CounterRow = std::array<std::uint64_t*, static_cast<std::size_t>(Counter::kCount)>;
  std::unordered_map<std::string, CounterRow> counters_;
  CounterRow* last_counters_ = nullptr;  // the row of `last_counted_` (nodes never move)
  std::string last_counted_;
};

}  // namespace toolbridge::cache
