#include "cache/cache_meta.h"

#include <cmath>

#include "json/envelope.h"

namespace toolbridge::cache {

namespace {
constexpr std::string_view kUsage =
    R"(_meta["toolbridge/cache"] must be "bypass", "refresh", or a max age: {"max_age_ms": N} )"
    "or N, a whole number of milliseconds";
constexpr double kMaxAgeLimit = 1e15;

bool max_age(const boost::json::value& v, std::int64_t& out) {
  if (!v.is_number()) return false;
  boost::system::error_code ec;
  const double d = v.to_number<double>(ec);
  if (ec || !(d >= 0) || d > kMaxAgeLimit || std::trunc(d) != d) return false;
  out = static_cast<std::int64_t>(d);
  return true;
}
}  // namespace

std::string read_cache_meta(const boost::json::value& v, std::string& mode,
                            std::int64_t& max_age_ms) {
  if (v.is_string()) {
    if (v.as_string() != "bypass" && v.as_string() != "refresh") return std::string(kUsage);
    mode = std::string(v.as_string());
    return {};
  }
  if (v.is_object()) {
    const auto& o = v.as_object();
    const auto* age = o.if_contains("max_age_ms");
    if (o.size() != 1 || !age || !max_age(*age, max_age_ms)) return std::string(kUsage);
    return {};
  }
  if (!max_age(v, max_age_ms)) return std::string(kUsage);
  return {};
}

std::string with_cache_meta(std::string_view result, std::string_view info) {
  const auto members = json::object_members(result);
  if (!members) return std::string(result);
  std::string_view old_meta;
  for (const auto& m : *members) {
    if (m.name == "_meta") old_meta = m.value.in(result);
  }
  const auto meta_members = old_meta.empty() ? std::nullopt : json::object_members(old_meta);
  std::string meta;
  if (meta_members) {
    meta = json::rewrite_object(old_meta, *meta_members, {{kCacheMetaKey, std::string(info)}}, {});
  } else {
    meta = "{" + json::quote(kCacheMetaKey) + ":" + std::string(info) + "}";
  }
  return json::rewrite_object(result, *members, {{"_meta", meta}}, {});
}

}  // namespace toolbridge::cache
