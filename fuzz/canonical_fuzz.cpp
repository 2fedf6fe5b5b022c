// libFuzzer target: the cache key's canonical form of a call's arguments (src/cache/canonical.h).
// Text that has one is JSON the gateway's parser reads; the form is itself JSON and is its own
// canonical form (numbers are read as the nearest double, so their shortest text reads back the
// same).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cache/canonical.h"
#include "json/parse.h"

namespace {

namespace json = toolbridge::json;

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto canonical = toolbridge::cache::canonical_json(text);
  if (!canonical) return 0;
  boost::system::error_code ec;
  (void)json::parse(text, ec);
  require(!ec);
  (void)json::parse(*canonical, ec);
  require(!ec);
  const auto again = toolbridge::cache::canonical_json(*canonical);
  require(again && *again == *canonical);
  return 0;
}
