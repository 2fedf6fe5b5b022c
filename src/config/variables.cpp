#include "config/variables.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace toolbridge::config {

bool is_env_name(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

base::Expected<std::string> expand_env_refs(std::string_view raw) {
  std::string out;
  std::size_t at = 0;
  for (;;) {
    const std::size_t open = raw.find("${env:", at);
    if (open == std::string_view::npos) break;
    const std::size_t close = raw.find('}', open);
    if (close == std::string_view::npos) return base::fail("'${env:' without a closing '}'");
    const std::string name(raw.substr(open + 6, close - open - 6));
    if (!is_env_name(name))
      return base::fail(fmt::format("'{}' is not an environment variable name", name));
    const char* env = std::getenv(name.c_str());
    if (!env) {
      return base::fail(
          fmt::format("environment variable {} (from ${{env:{}}}) is not set in the "
                      "gateway's environment",
                      name, name));
    }
    out.append(raw.substr(at, open - at));
    out += env;
    at = close + 1;
  }
  out.append(raw.substr(at));
  return out;
}

std::vector<std::string> session_var_refs(std::string_view value) {
  std::vector<std::string> refs;
  for (std::size_t at = value.find("${session."); at != std::string_view::npos;
       at = value.find("${session.", at + 2)) {
    const std::size_t close = value.find('}', at);
    const std::size_t length =
        close == std::string_view::npos ? std::string_view::npos : close - at + 1;
    refs.emplace_back(value.substr(at, length));
  }
  return refs;
}

}  // namespace toolbridge::config
