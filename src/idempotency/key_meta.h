#pragma once
// The caller's idempotency key of one call: _meta["toolbridge/idempotency_key"] on tools/call, or
// a /v1/batch call's `id`. Validated where it is read; the idempotency stage owns what it means.
#include <boost/json/value.hpp>
#include <string>
#include <string_view>

#include "base/expected.h"
#include "call/meta_key.h"

namespace toolbridge::idempotency {

inline constexpr std::string_view kKeyMeta = "toolbridge/idempotency_key";
inline constexpr std::size_t kMaxKeyBytes = 256;

// Success if `v` can be an idempotency key, else why not: a key is a string of 1-256 ASCII
// characters from '!' to '~' (a UUID, a tool-call id). `where` names it in the message.
base::Status check_key(const boost::json::value& v, std::string_view where);

// The call's idempotency key (a slot of the call; absent: the call has none).
struct Key {
  std::string value;
};
// kKeyMeta, read into the call's Key.
call::MetaKey key_meta_key();
// The key of `call`, empty if it has none.
std::string_view key_of(const call::Call& call);

}  // namespace toolbridge::idempotency
