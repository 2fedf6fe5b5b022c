#include "mcp/protocol.h"

namespace toolbridge::mcp {

std::string_view to_string(Version v) {
  switch (v) {
    case Version::k2025_03_26: return "2025-03-26";
    case Version::k2025_06_18: return "2025-06-18";
    case Version::k2025_11_25: return "2025-11-25";
  }
  return "2025-03-26";
}

std::optional<Version> parse_version(std::string_view s) {
  for (Version v : kSupportedVersions) {
    if (to_string(v) == s) return v;
  }
  return std::nullopt;
}

Version negotiate(std::string_view requested) {
  return parse_version(requested).value_or(kLatestVersion);
}

int log_level_rank(std::string_view level) {
  constexpr std::array<std::string_view, 8> kLevels = {
      "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};
  for (std::size_t i = 0; i < kLevels.size(); ++i) {
    if (kLevels[i] == level) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace toolbridge::mcp
