#pragma once
// The caller's word on the cache for one call, _meta["toolbridge/cache"], and the word of the
// gateway on a result it answers from the cache: the result's _meta["toolbridge/cache"].
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"
#include "call/meta_key.h"
#include "json/envelope.h"

namespace toolbridge::cache {

inline constexpr std::string_view kCacheMetaKey = "toolbridge/cache";

// The caller's word on the cache for one call (a slot of the call, read from kCacheMetaKey).
struct Request {
  // "bypass" (no cache, no coalescing), "refresh" (run it and store the new result) or empty.
  std::string mode;
  std::int64_t max_age_ms = -1;  // the oldest cached result it accepts, in ms (-1: any)
};
// kCacheMetaKey, read into the call's Request.
call::MetaKey request_meta_key();

// Reads "bypass", "refresh", {"max_age_ms": N} or N (a max age in ms) into `mode` and
// `max_age_ms`, or says why the value is not one of those.
base::Status read_cache_meta(const boost::json::value& v, std::string& mode,
                             std::int64_t& max_age_ms);

// `result` (a tools/call result object, raw JSON) with `info` (raw JSON) as
// _meta["toolbridge/cache"]. A result that is not an object comes back as is.
std::string with_cache_meta(std::string_view result, std::string_view info);

// with_cache_meta(result, info) for any `info`, worked out once: `text` with `info` written at
// each of `holes` (ascending offsets into `text`; one, unless _meta or its "toolbridge/cache"
// member appears twice). Lets a cache hit write its answer without reading the result again.
struct MetaLayout {
  std::string text;
  std::vector<std::size_t> holes;
};
// nullopt if `result` is not an object.
std::optional<MetaLayout> cache_meta_layout(std::string_view result);

// What a hit says of itself: {"hit":true,"tier":"TIER","age_ms":AGE}.
void append_hit_info(std::string& out, std::string_view tier, std::int64_t age_ms);

// The JSON-RPC response to request `id` (raw JSON) answered from the cache: the result whose
// layout is `text` with its one hole at `hole`, filled with the hit's info. The same bytes as
// json::make_result(id, with_cache_meta(result, info)), in one allocation.
std::string hit_response(std::string_view id, std::string_view text, std::size_t hole,
                         std::string_view tier, std::int64_t age_ms);

// Where the result sits in `response`, written for request `id` by hit_response or
// json::make_result: last, before the closing brace.
json::Span result_span(std::string_view id, std::string_view response);

}  // namespace toolbridge::cache
