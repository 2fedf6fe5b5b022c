// The result cache's keys: `cache:` of a server entry (tools, ttl, scope, tier, annotations) and
// `gateway.cache` (memory_bytes, max_entry_bytes, disk, redis). Kept apart from server_keys.cpp
// and gateway_section.cpp: they belong to the cache component.
#include <fmt/format.h>

#include <array>
#include <charconv>
#include <optional>

#include "config/gateway_section.h"
#include "config/server_keys.h"

namespace toolbridge::config {
namespace {

constexpr std::array<std::string_view, 5> kServerCacheKeys{"tools", "ttl", "scope", "tier",
                                                           "annotations"};
constexpr std::array<std::string_view, 3> kToolCacheKeys{"ttl", "scope", "tier"};
constexpr std::array<std::string_view, 3> kScopes{"global", "tenant", "trajectory"};
constexpr std::array<std::string_view, 3> kTiers{"memory", "disk", "redis"};
constexpr std::array<std::string_view, 4> kStoreKeys{"memory_bytes", "max_entry_bytes", "disk",
                                                     "redis"};
constexpr std::array<std::string_view, 2> kDiskKeys{"path", "max_bytes"};
constexpr std::array<std::string_view, 3> kRedisKeys{"address", "timeout", "key_prefix"};
constexpr std::size_t kMaxToolName = 256;

struct ToolCacheDraft {
  std::optional<Duration> ttl;
  std::optional<CacheScope> scope;
  std::optional<CacheTier> tier;
};

CacheScope scope(const NodeReader& r, const Node& n, const std::string& path) {
  const std::string_view s = r.one_of(n, path, kScopes);
  return s == "tenant"       ? CacheScope::kTenant
         : s == "trajectory" ? CacheScope::kTrajectory
                             : CacheScope::kGlobal;
}

CacheTier tier(const NodeReader& r, const Node& n, const std::string& path) {
  const std::string_view t = r.one_of(n, path, kTiers);
  return t == "disk" ? CacheTier::kDisk : t == "redis" ? CacheTier::kRedis : CacheTier::kMemory;
}

// ttl, scope, tier: the keys a server and a tool share.
bool read_common(const NodeReader& r, const Entry& k, const std::string& kp, ToolCacheDraft& d) {
  if (k.key == "ttl") {
    d.ttl = r.duration(k.value, kp, /*allow_zero=*/false);
  } else if (k.key == "scope") {
    d.scope = scope(r, k.value, kp);
  } else if (k.key == "tier") {
    d.tier = tier(r, k.value, kp);
  } else {
    return false;
  }
  return true;
}

void check_tool_name(const NodeReader& r, Mark mark, const std::string& path,
                     std::string_view name) {
  if (name.empty() || name.size() > kMaxToolName) {
    r.fail(mark, path, fmt::format("a tool name is 1-{} bytes", kMaxToolName));
  }
}

ToolCache resolve(const ToolCacheDraft& tool, const ToolCache& server) {
  ToolCache c = server;
  if (tool.ttl) c.ttl = *tool.ttl;
  if (tool.scope) c.scope = *tool.scope;
  if (tool.tier) c.tier = *tool.tier;
  return c;
}

void read_server_cache(const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
  ServerCache& cache = d.server.cache;
  cache.configured = true;
  ToolCacheDraft defaults;
  std::map<std::string, ToolCacheDraft, std::less<>> tools;
  NodeReader::Seen seen;
  for (const Entry& k : r.entries(e.value, p)) {
    r.check_key(k, p, kServerCacheKeys, /*lenient=*/false, seen);
    const std::string kp = join_path(p, k.key);
    if (read_common(r, k, kp, defaults)) continue;
    if (k.key == "annotations") {
      cache.annotations = r.boolean(k.value, kp);
      continue;
    }
    // tools: "*", a list of names ("*" among them), or a mapping name -> {ttl, scope, tier}.
    const Node& v = k.value;
    if (v.kind == Node::Kind::kScalar) {
      if (v.scalar != "*") {
        r.fail(v.mark, kp,
               fmt::format("expected \"*\", a {} of tool names or a {} by tool name", r.list_noun(),
                           r.map_noun()));
      }
      cache.all_tools = true;
    } else if (v.kind == Node::Kind::kList) {
      const auto& items = r.items(v, kp);
      for (std::size_t i = 0; i < items.size(); ++i) {
        const std::string ip = fmt::format("{}[{}]", kp, i);
        const std::string& name = r.text(items[i], ip);
        check_tool_name(r, items[i].mark, ip, name);
        if (name == "*") {
          cache.all_tools = true;
        } else if (!tools.emplace(name, ToolCacheDraft{}).second) {
          r.fail(items[i].mark, ip, fmt::format("'{}' is listed twice", name));
        }
      }
    } else {
      for (const Entry& t : r.entries(v, kp)) {
        const std::string tp = join_path(kp, t.key);
        check_tool_name(r, t.key_mark, tp, t.key);
        if (t.key == "*") r.fail(t.key_mark, tp, "\"*\" is written as tools: \"*\"");
        ToolCacheDraft tool;
        NodeReader::Seen tool_seen;
        for (const Entry& tk : r.entries(t.value, tp)) {
          r.check_key(tk, tp, kToolCacheKeys, /*lenient=*/false, tool_seen);
          read_common(r, tk, join_path(tp, tk.key), tool);
        }
        if (!tools.emplace(t.key, tool).second) {
          r.fail(t.key_mark, tp, fmt::format("'{}' is listed twice", t.key));
        }
      }
    }
  }
  cache.defaults = resolve(defaults, ToolCache{});
  for (const auto& [name, draft] : tools) cache.tools[name] = resolve(draft, cache.defaults);
}

std::pair<std::string, unsigned short> redis_address(const NodeReader& r, const Node& n,
                                                     const std::string& path) {
  std::string_view a = r.text(n, path);
  if (a.starts_with("redis://")) a.remove_prefix(8);
  if (a.ends_with("/")) a.remove_suffix(1);
  const std::size_t colon = a.rfind(':');
  unsigned port = 6379;
  std::string_view host = a.substr(0, colon);
  if (colon != std::string_view::npos) {
    const std::string_view digits = a.substr(colon + 1);
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (ec != std::errc() || ptr != digits.data() + digits.size() || port == 0 || port > 65535) {
      r.fail(n.mark, path, fmt::format("expected HOST:PORT like 127.0.0.1:6379, got '{}'", a));
    }
  }
  if (host.empty() || host.find_first_of("/ @") != std::string_view::npos) {
    r.fail(n.mark, path, fmt::format("expected HOST:PORT like 127.0.0.1:6379, got '{}'", a));
  }
  return {std::string(host), static_cast<unsigned short>(port)};
}

}  // namespace

std::string_view to_string(CacheScope s) {
  switch (s) {
    case CacheScope::kGlobal:
      return "global";
    case CacheScope::kTenant:
      return "tenant";
    case CacheScope::kTrajectory:
      return "trajectory";
  }
  return "global";
}

std::string_view to_string(CacheTier t) {
  switch (t) {
    case CacheTier::kMemory:
      return "memory";
    case CacheTier::kDisk:
      return "disk";
    case CacheTier::kRedis:
      return "redis";
  }
  return "memory";
}

ServerKeyReader cache_key_reader(std::string_view key) {
  return key == "cache" ? read_server_cache : nullptr;
}

void read_cache_store(const NodeReader& r, const Node& node, const std::string& path,
                      CacheStore& c) {
  NodeReader::Seen seen;
  for (const Entry& e : r.entries(node, path)) {
    r.check_key(e, path, kStoreKeys, /*lenient=*/false, seen);
    const std::string p = join_path(path, e.key);
    if (e.key == "memory_bytes") {
      c.memory_bytes = r.size(e.value, p);
    } else if (e.key == "max_entry_bytes") {
      c.max_entry_bytes = r.size(e.value, p);
    } else if (e.key == "disk") {
      NodeReader::Seen disk_seen;
      for (const Entry& k : r.entries(e.value, p)) {
        r.check_key(k, p, kDiskKeys, /*lenient=*/false, disk_seen);
        const std::string kp = join_path(p, k.key);
        if (k.key == "path") {
          c.disk_path = r.text(k.value, kp);
          if (c.disk_path.empty() || c.disk_path.front() != '/') {
            r.fail(k.value.mark, kp,
                   fmt::format("must be an absolute path, got '{}'", c.disk_path));
          }
        } else {
          c.disk_bytes = r.size(k.value, kp);
          if (c.disk_bytes < (1u << 20)) r.fail(k.value.mark, kp, "must be at least 1MiB");
        }
      }
      if (c.disk_path.empty()) r.fail(e.key_mark, p, "needs a path (the LMDB directory)");
    } else if (e.key == "redis") {
      NodeReader::Seen redis_seen;
      for (const Entry& k : r.entries(e.value, p)) {
        r.check_key(k, p, kRedisKeys, /*lenient=*/false, redis_seen);
        const std::string kp = join_path(p, k.key);
        if (k.key == "address") {
          std::tie(c.redis_host, c.redis_port) = redis_address(r, k.value, kp);
        } else if (k.key == "timeout") {
          c.redis_timeout = r.duration(k.value, kp, /*allow_zero=*/false);
        } else {
          c.redis_prefix = r.text(k.value, kp);
          if (c.redis_prefix.size() > 128) r.fail(k.value.mark, kp, "at most 128 bytes");
        }
      }
      if (c.redis_host.empty()) r.fail(e.key_mark, p, "needs an address (HOST:PORT)");
    }
  }
}

void check_cache_tiers(const Config& config) {
  const CacheStore& store = config.gateway.cache;
  for (const Server& s : config.servers) {
    if (!s.cache.configured) continue;
    const std::string path = "servers." + s.name + ".cache";
    auto check = [&](const ToolCache& t, const std::string& where) {
      if (t.tier == CacheTier::kDisk && store.disk_path.empty()) {
        throw_config_error(config.source, Mark{}, where,
                           "tier disk needs gateway.cache.disk.path (the LMDB directory)");
      }
      if (t.tier == CacheTier::kRedis && store.redis_host.empty()) {
        throw_config_error(config.source, Mark{}, where,
                           "tier redis needs gateway.cache.redis.address");
      }
      // A per_session server's answers depend on the trajectory's own instance.
      if (s.policy == Policy::kPerSession && t.scope != CacheScope::kTrajectory) {
        throw_config_error(config.source, Mark{}, where,
                           "a per_session server's results are cached only with scope: "
                           "trajectory (each trajectory has its own instance)");
      }
    };
    check(s.cache.defaults, path);
    for (const auto& [tool, t] : s.cache.tools) check(t, path + ".tools." + tool);
  }
}

}  // namespace toolbridge::config
