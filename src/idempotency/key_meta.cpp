#include "idempotency/key_meta.h"

#include <fmt/format.h>

#include <algorithm>

namespace toolbridge::idempotency {

base::Status check_key(const boost::json::value& v, std::string_view where) {
  const auto rule = "must be a string of 1-256 ASCII characters from '!' to '~' (no spaces; e.g. a UUID)";
  if (!v.is_string()) return base::fail(fmt::format("{} {}", where, rule));
  const std::string_view key = v.get_string();
  const bool printable = std::all_of(key.begin(), key.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return b > 0x20 && b < 0x7f;
  });
  if (key.empty() || key.size() > kMaxKeyBytes || !printable)
    return base::fail(fmt::format("{} {}", where, rule));
  return {};
}

call::MetaKey key_meta_key() {
  return {kKeyMeta, [](call::Call& call, const boost::json::value& v) {
            base::Status valid = check_key(v, "_meta[\"" + std::string(kKeyMeta) + "\"]");
            if (valid) call.slots.get<Key>().value = std::string(v.as_string());
            return valid;
          }};
}

std::string_view key_of(const call::Call& call) {
  const Key* key = call.slots.find<Key>();
  return key ? std::string_view(key->value) : std::string_view();
}

}  // namespace toolbridge::idempotency
