#include "cache/cache_stage.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "cache/cache_meta.h"
#include "cache/disk_tier.h"
#include "cache/redis_tier.h"
#include "json/envelope.h"
#include "upstream/upstream.h"

namespace toolbridge::cache {

namespace asio = boost::asio;
using call::Call;
using call::Fault;
using call::Result;

namespace {

constexpr const char* kHits = "toolbridge_cache_hits_total";
constexpr const char* kMisses = "toolbridge_cache_misses_total";
constexpr const char* kCoalesced = "toolbridge_cache_coalesced_total";
constexpr const char* kStores = "toolbridge_cache_stores_total";
constexpr const char* kSkipped = "toolbridge_cache_not_stored_total";

std::int64_t wall_ms(const base::Clock& clock) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock.wall_now().time_since_epoch())
      .count();
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void skip_space(std::string_view s, std::size_t& p) {
  while (p < s.size() && is_space(s[p])) ++p;
}

// Steps over the string literal at `p`; `escaped` tells whether it holds an escape.
bool skip_string(std::string_view s, std::size_t& p, bool& escaped) {
  for (++p; p < s.size(); ++p) {
    if (s[p] == '\\') {
      escaped = true;
      ++p;
    } else if (s[p] == '"') {
      ++p;
      return true;
    }
  }
  return false;
}

bool skip_string(std::string_view s, std::size_t& p) {
  bool escaped = false;
  return skip_string(s, p, escaped);
}

// Steps over the value at `p`: strings and brackets are followed, nothing else is checked.
bool skip_value(std::string_view s, std::size_t& p) {
  if (p >= s.size()) return false;
  if (s[p] == '"') return skip_string(s, p);
  if (s[p] != '{' && s[p] != '[') {
    const std::size_t start = p;
    while (p < s.size() && !is_space(s[p]) && s[p] != ',' && s[p] != '}' && s[p] != ']') ++p;
    return p > start;
  }
  std::size_t open = 0;
  while (p < s.size()) {
    const char c = s[p];
    if (c == '"') {
      if (!skip_string(s, p)) return false;
      continue;
    }
    ++p;
    if (c == '{' || c == '[') ++open;
    if ((c == '}' || c == ']') && --open == 0) return true;
  }
  return false;
}

// The raw value of the first "arguments" member of `params`, "{}" if it has none, found without
// unescaping names or allocating. Params were checked when the call was read and the gateway
// writes only valid JSON into them, so following strings and brackets finds the members; a name
// with an escape, or anything not shaped like an object, gives nullopt: the validating scan
// decides.
std::optional<std::string_view> find_arguments(std::string_view params) {
  std::size_t p = 0;
  skip_space(params, p);
  if (p >= params.size() || params[p] != '{') return std::nullopt;
  ++p;
  skip_space(params, p);
  std::optional<std::string_view> found;
  if (p < params.size() && params[p] == '}') {
    ++p;
  } else {
    for (;;) {
      skip_space(params, p);
      const std::size_t name = p;
      bool escaped = false;
      if (p >= params.size() || params[p] != '"' || !skip_string(params, p, escaped) || escaped) {
        return std::nullopt;
      }
      const std::string_view raw_name = params.substr(name + 1, p - name - 2);
      skip_space(params, p);
      if (p >= params.size() || params[p] != ':') return std::nullopt;
      ++p;
      skip_space(params, p);
      const std::size_t value = p;
      if (!skip_value(params, p)) return std::nullopt;
      if (!found && raw_name == "arguments") found = params.substr(value, p - value);
      skip_space(params, p);
      if (p < params.size() && params[p] == '}') {
        ++p;
        break;
      }
      if (p >= params.size() || params[p] != ',') return std::nullopt;
      ++p;
    }
  }
  skip_space(params, p);
  if (p != params.size()) return std::nullopt;
  return found ? *found : std::string_view("{}");
}

// The arguments as the server will get them (after repair).
std::string_view arguments(const Call& call) {
  if (!call.arguments_rewritten) {
    // As the caller wrote them: their place in params is known, no scan.
    const std::string_view written = call.member("arguments");
    return written.empty() ? std::string_view("{}") : written;
  }
  const std::string_view params =
      call.upstream_params.empty() ? std::string_view(call.params) : call.upstream_params;
  if (const auto found = find_arguments(params)) return *found;
  const auto members = json::object_members(params);
  if (!members) return {};
  for (const auto& m : *members) {
    if (m.name == "arguments") return m.value.in(params);
  }
  return "{}";
}

// The caller's word on the cache for `call` (none: the defaults).
const Request& request_of(const Call& call) {
  static const Request kNone;
  const Request* asked = call.slots.find<Request>();
  return asked ? *asked : kNone;
}

// A result stored at `stored_ms` is no older than the caller accepts.
bool fresh_enough(const Request& asked, std::int64_t now, std::int64_t stored_ms) {
  return asked.max_age_ms < 0 || now - stored_ms <= asked.max_age_ms;
}

// The result object of a response the server answered with success, without isError: true.
std::string_view storable_result(const Result& r) {
  if (r.fault != Fault::kNone || r.response.empty()) return {};
  const json::Envelope env = json::parse_envelope(r.response);
  if (env.kind != json::Kind::kResponse || env.result.empty()) return {};
  const std::string_view result = env.result.in(r.response);
  const auto members = json::object_members(result);
  if (!members) return {};
  for (const auto& m : *members) {
    if (m.name == "isError" && m.value.in(result) != "false") return {};
  }
  return result;
}

}  // namespace

CacheStage::CacheStage(asio::io_context& io, const config::Config& config,
                       const catalog::Catalog& catalog, telemetry::Metrics& metrics,
                       const base::Clock& clock)
    : catalog_(catalog),
      metrics_(metrics),
      clock_(clock),
      store_(config.gateway.cache),
      memory_(std::make_unique<MemoryTier>(config.gateway.cache.memory_bytes)),
      coalescer_(io, clock) {
  if (!store_.disk_path.empty()) {
    try {
      disk_ = std::make_unique<DiskTier>(store_.disk_path, store_.disk_bytes);
      spdlog::info("cache: disk tier in {} ({} bytes in use)", store_.disk_path, disk_->bytes());
    } catch (const std::exception& e) {
      // A cache is never a reason to refuse calls: its entries go to memory instead.
      spdlog::error("cache: {}; the disk tier's entries are kept in memory", e.what());
    }
  }
  if (!store_.redis_host.empty()) {
    redis_ = std::make_unique<RedisTier>(io, clock_, store_.redis_host, store_.redis_port,
                                         store_.redis_timeout, store_.redis_prefix);
    metrics_.counter_fn("toolbridge_cache_redis_failures_total",
                        "Redis connections refused or lost, and commands it did not answer in "
                        "time (each such call was a miss).",
                        [this](auto& out) {
                          out.emplace_back(
                              std::string(),
                              static_cast<double>(static_cast<RedisTier&>(*redis_).failures()));
                        });
  }
  set_servers(config.servers);
  metrics_.describe(kHits, "counter", "Tool calls answered from the result cache, by tier.");
  metrics_.describe(kMisses, "counter",
                    "Calls of cached tools that found no fresh entry (or were told to refresh).");
  metrics_.describe(kCoalesced, "counter",
                    "Calls that shared the execution of an identical call already in flight.");
  metrics_.describe(kStores, "counter", "Results stored in the cache, by tier.");
  metrics_.describe(kSkipped, "counter",
                    "Results of cached tools not stored, by reason (error, too_large, deadline).");
  metrics_.counter_fn("toolbridge_cache_evictions_total",
                      "Entries the cache dropped for room or expiry, by tier.", [this](auto& out) {
                        for (const Tier* t : tiers()) {
                          if (t)
                            out.emplace_back(telemetry::labels({{"tier", t->name()}}),
                                             static_cast<double>(t->evictions()));
                        }
                      });
  metrics_.gauge("toolbridge_cache_bytes", "Bytes the result cache holds, by tier.",
                 [this](auto& out) {
                   for (const Tier* t : tiers()) {
                     if (t)
                       out.emplace_back(telemetry::labels({{"tier", t->name()}}),
                                        static_cast<double>(t->bytes()));
                   }
                 });
  metrics_.counter_fn("toolbridge_cache_upstream_seconds_saved_total",
                      "Upstream time the cache saved: what each hit's and each coalesced "
                      "call's result took the server to make.",
                      [this](auto& out) { out.emplace_back(std::string(), seconds_saved_); });
}

CacheStage::~CacheStage() = default;

void CacheStage::set_servers(const std::vector<config::Server>& servers) {
  servers_.clear();
  for (const auto& s : servers) {
    ServerPolicy p;
    p.server = &s;
    p.idempotent_all = std::find(s.idempotent_tools.begin(), s.idempotent_tools.end(), "*") !=
                       s.idempotent_tools.end();
    p.annotated = s.cache.defaults;
    servers_.emplace(s.name, p);
  }
}

bool CacheStage::applies(const Call& call) const {
  if (!call.is_tool_call() || call.task_augmented) return false;
  auto it = servers_.find(call.route.server);
  if (it == servers_.end()) return false;
  const config::Server& s = *it->second.server;
  return s.cache.configured || !s.idempotent_tools.empty();
}

Plan CacheStage::plan(const Call& call) const {
  Plan p;
  auto it = servers_.find(call.route.server);
  if (it == servers_.end()) return p;
  const ServerPolicy& sp = it->second;
  const config::Server& s = *sp.server;
  const std::string& tool = call.route.tool;
  p.cache = s.cache.configured ? s.cache.for_tool(tool) : nullptr;
  bool idempotent =
      sp.idempotent_all || std::find(s.idempotent_tools.begin(), s.idempotent_tools.end(), tool) !=
                               s.idempotent_tools.end();
  if (s.cache.annotations && (!p.cache || !idempotent)) {
    if (const catalog::Entry* e = catalog_.tool(call.route.label)) {
      if (!p.cache && e->read_only_hint) p.cache = &sp.annotated;
      idempotent = idempotent || e->idempotent_hint || e->read_only_hint;
    }
  }
  p.coalesce = p.cache || idempotent;
  if (p.cache) {
    p.scope = p.cache->scope;
  } else if (s.policy == config::Policy::kPerSession) {
    p.scope = Scope::kTrajectory;  // each trajectory has an instance of its own
  }
  return p;
}

std::string CacheStage::key(const Call& call, const Plan& plan) {
  return make_key_of_arguments(call.route.server, call.route.tool, plan.scope, call.tenant,
                               call.trajectory, arguments(call));
}

Tier* CacheStage::tier_for(config::CacheTier t) const {
  switch (t) {
    case config::CacheTier::kDisk:
      return disk_ ? disk_.get() : memory_.get();
    case config::CacheTier::kRedis:
      return redis_ ? redis_.get() : memory_.get();
    case config::CacheTier::kMemory:
      break;
  }
  return memory_.get();
}

void CacheStage::count(Counter which, const Call& call) {
  // One label string per tool and counter, made the first time: a hit costs an increment. A
  // batch's calls of one tool come together: its row is found once for them.
  if (!last_counters_ || last_counted_ != call.route.display_name) {
    last_counters_ = &counters_[call.route.display_name];
    last_counted_ = call.route.display_name;
  }
  std::uint64_t*& cell = (*last_counters_)[static_cast<std::size_t>(which)];
  if (!cell) {
    const auto tier = [](Counter c) -> std::string_view {
      return c == Counter::kHitMemory ? "memory" : c == Counter::kHitDisk ? "disk" : "redis";
    };
    const std::string labels =
        which == Counter::kMiss || which == Counter::kCoalesced
            ? telemetry::labels({{"server", call.route.server}, {"tool", call.route.label}})
            : telemetry::labels({{"server", call.route.server},
                                 {"tool", call.route.label},
                                 {"tier", tier(which)}});
    const std::string name = which == Counter::kMiss        ? kMisses
                             : which == Counter::kCoalesced ? kCoalesced
                                                            : kHits;
    cell = &metrics_.counter_cell(name, labels);
  }
  ++*cell;
}

asio::awaitable<Result> CacheStage::handle(Call& call, call::Next next) {
  // Not a coroutine: a call this stage leaves alone, and a memory hit, cost no frame of their own.
  Plan p = plan(call);
  const Request& asked = request_of(call);
  if (asked.mode == "bypass" || (!p.cache && !p.coalesce)) return next(call);
  std::string k = key(call, p);
  if (k.empty()) return next(call);  // no canonical form: neither cached nor shared
  bool looked_up = false;
  if (p.cache && asked.mode != "refresh" && tier_for(p.cache->tier) == memory_.get()) {
    const std::int64_t now = wall_ms(clock_);
    if (const Entry* e = memory_->find(k, now)) {
      if (fresh_enough(asked, now, e->stored_ms)) {
        call.cached = true;
        return call::ready(hit(call, *e, *memory_, now));
      }
    }
    looked_up = true;
  }
  return run(call, next, p, std::move(k), looked_up);
}

Result CacheStage::hit(const Call& call, const Entry& e, const Tier& tier, std::int64_t now) {
  const std::int64_t age = std::max<std::int64_t>(0, now - e.stored_ms);
  count(&tier == memory_.get() ? Counter::kHitMemory
        : &tier == disk_.get() ? Counter::kHitDisk
                               : Counter::kHitRedis,
        call);
  seconds_saved_ += e.upstream_seconds;
  Result r;
  if (e.meta_hole != Entry::kAsSent) {
    r.response = hit_response(call.id, e.result, e.meta_hole, tier.name(), age);
  } else {
    std::string info;
    append_hit_info(info, tier.name(), age);
    r.response = json::make_result(call.id, with_cache_meta(e.result, info));
  }
  r.result_at = result_span(call.id, r.response);
  return r;
}

asio::awaitable<Result> CacheStage::run(Call& call, call::Next next, Plan plan, std::string k,
                                        bool looked_up) {
  const Request& asked = request_of(call);
  if (plan.cache && asked.mode != "refresh" && !looked_up) {
    Tier* tier = tier_for(plan.cache->tier);
    const std::int64_t now = wall_ms(clock_);
    std::optional<Entry> found = co_await tier->get(k, now);
    if (found && fresh_enough(asked, now, found->stored_ms)) {
      call.cached = true;
      co_return hit(call, *found, *tier, now);
    }
  }
  Coalescer::Lead lead;
  if (plan.coalesce) {
    while (true) {
      Coalescer::Join joined = co_await coalescer_.join(k, call);
      if (!joined.joined) break;
      if (joined.result) {
        if (joined.result->fault != Fault::kCancelled && joined.result->fault != Fault::kTimeout) {
          count(Counter::kCoalesced, call);
          seconds_saved_ += joined.upstream_seconds;
        }
        co_return std::move(*joined.result);
      }
      // The leader was cancelled: run it (or join whoever leads now).
    }
    lead = coalescer_.lead(k);
  }
  if (plan.cache) count(Counter::kMiss, call);
  const auto started = clock_.now();
  Result r = co_await next(call);
  const double seconds = std::chrono::duration<double>(clock_.now() - started).count();
  if (plan.cache) store(call, plan, k, r, seconds);
  lead.finish(r, seconds);
  co_return r;
}

void CacheStage::store(const Call& call, const Plan& plan, const std::string& key, const Result& r,
                       double upstream_seconds) {
  auto skipped = [&](std::string_view reason) {
    metrics_.add(kSkipped, telemetry::labels({{"server", call.route.server},
                                              {"tool", call.route.label},
                                              {"reason", reason}}));
  };
  const std::string_view result = storable_result(r);
  if (result.empty()) {
    // Errors are never stored; a cancelled call has no result at all.
    if (r.fault != Fault::kCancelled) skipped("error");
    return;
  }
  if (clock_.now() >= call.deadline) return skipped("deadline");
  if (result.size() > store_.max_entry_bytes) return skipped("too_large");
  Tier* tier = tier_for(plan.cache->tier);
  const std::int64_t now = wall_ms(clock_);
  Entry e;
  // Memory hits are the ones worth a layout: worked out once here, not on every hit.
  auto layout = tier == memory_.get() ? cache_meta_layout(result) : std::nullopt;
  if (layout && layout->holes.size() == 1) {
    e.result = std::move(layout->text);
    e.meta_hole = layout->holes.front();
  } else {
    e.result = std::string(result);
  }
  e.stored_ms = now;
  e.expires_ms = now + plan.cache->ttl.count();
  e.upstream_seconds = upstream_seconds;
  tier->put(key, std::move(e), now);
  metrics_.add(kStores, telemetry::labels({{"tier", tier->name()}}));
}

}  // namespace toolbridge::cache
