#include "transport/local_origin.h"

#include <string>

namespace toolbridge::transport {

namespace {
bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 5) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}
}  // namespace

bool is_loopback_host(std::string_view host) {
  // Sizes known when compiled (a list of char pointers measured each a strlen on every request).
  static constexpr std::string_view kNames[] = {"localhost", "127.0.0.1", "[::1]"};
  for (const std::string_view name : kNames) {
    if (host.size() < name.size() || !ascii_iequals(host.substr(0, name.size()), name)) continue;
    const std::string_view rest = host.substr(name.size());
    if (rest.empty() || (rest.front() == ':' && all_digits(rest.substr(1)))) return true;
  }
  return false;
}

bool is_loopback_origin(std::string_view origin) {
  static constexpr std::string_view kSchemes[] = {"http://", "https://"};
  for (const std::string_view scheme : kSchemes) {
    if (origin.size() > scheme.size() && ascii_iequals(origin.substr(0, scheme.size()), scheme)) {
      return is_loopback_host(origin.substr(scheme.size()));
    }
  }
  return false;
}

bool is_loopback_address(std::string_view address) {
  if (address == "localhost" || address == "::1" || address == "[::1]") return true;
  return address.starts_with("127.");
}

}  // namespace toolbridge::transport
