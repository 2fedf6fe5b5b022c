#include "frontend/origin_guard.h"

#include "frontend/router.h"
#include "transport/local_origin.h"

namespace toolbridge::frontend {

bool origin_allowed(std::string_view origin, const std::vector<std::string>& allowed_origins) {
  if (origin.empty()) return true;  // not a browser
  for (const auto& allowed : allowed_origins) {
    if (origin == allowed) return true;
  }
  for (std::string_view prefix : {"http://localhost", "http://127.0.0.1", "http://[::1]",
                                  "https://localhost", "https://127.0.0.1", "https://[::1]"}) {
    if (origin.starts_with(prefix)) {
      const std::string_view rest = origin.substr(prefix.size());
      if (rest.empty() || rest.front() == ':') return true;
    }
  }
  return false;
}

std::string rebinding_refusal(const transport::Request& req, const config::Gateway& gateway) {
  const std::string_view origin = header(req, "Origin");
  if (!origin_allowed(origin, gateway.allowed_origins)) {
    return "Forbidden: Origin '" + std::string(origin) +
           "' is not allowed (gateway.allowed_origins)";
  }
  // DNS rebinding sends the attacker's name as Host.
  const std::string_view host = header(req, "Host");
  if (transport::is_loopback_address(gateway.host) && !host.empty() &&
      !transport::is_loopback_host(host)) {
    const std::string name(host);
    if (!origin_allowed("http://" + name, gateway.allowed_origins) &&
        !origin_allowed("https://" + name, gateway.allowed_origins)) {
      return "Forbidden: Host '" + name + "' is not a loopback name (gateway.allowed_origins)";
    }
  }
  return {};
}

}  // namespace toolbridge::frontend
