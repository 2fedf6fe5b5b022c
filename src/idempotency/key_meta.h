#pragma once
// The caller's idempotency key of one call: _meta["toolbridge/idempotency_key"] on tools/call, or
// a /v1/batch call's `id`. Validated where it is read; the idempotency stage owns what it means.
#include <boost/json/value.hpp>
#include <string>
#include <string_view>

namespace toolbridge::idempotency {

inline constexpr std::string_view kKeyMeta = "toolbridge/idempotency_key";
inline constexpr std::size_t kMaxKeyBytes = 256;

// Why `v` cannot be an idempotency key (empty if it can): a string of 1-256 ASCII characters
// from '!' to '~' (a UUID, a tool-call id). `where` names it in the message.
std::string key_error(const boost::json::value& v, std::string_view where);

}  // namespace toolbridge::idempotency
