#pragma once
// The caller's word on the cache for one call, _meta["toolbridge/cache"], and the word of the
// gateway on a result it answers from the cache: the result's _meta["toolbridge/cache"].
#include <boost/json/value.hpp>
#include <cstdint>
#include <string>
#include <string_view>

namespace toolbridge::cache {

inline constexpr std::string_view kCacheMetaKey = "toolbridge/cache";

// Reads "bypass", "refresh", {"max_age_ms": N} or N (a max age in ms) into `mode` and
// `max_age_ms`; returns why the value is not one of those (empty if it is).
std::string read_cache_meta(const boost::json::value& v, std::string& mode,
                            std::int64_t& max_age_ms);

// `result` (a tools/call result object, raw JSON) with `info` (raw JSON) as
// _meta["toolbridge/cache"]. A result that is not an object comes back as is.
std::string with_cache_meta(std::string_view result, std::string_view info);

}  // namespace toolbridge::cache
