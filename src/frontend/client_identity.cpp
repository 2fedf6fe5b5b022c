#include "frontend/client_identity.h"

#include <fmt/format.h>

#include <algorithm>

#include "config/config.h"
#include "frontend/router.h"

namespace toolbridge::frontend {

base::Expected<std::string> owner_of(const transport::Exchange& ex) {
  // An API key names its tenant; what the caller says is not asked.
  if (ex.principal) return "tenant " + ex.principal->tenant;
  const std::string tenant(header(ex.request(), kTenantHeader));
  if (tenant.empty()) return "address " + ex.client();
  const bool valid = tenant.size() <= 128 && std::all_of(tenant.begin(), tenant.end(), [](char c) {
                       return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':' ||
                              c == '-';
                     });
  if (!valid)
    return base::fail(std::string(kTenantHeader) + " must be 1-128 characters of [A-Za-z0-9._:-]");
  return "tenant " + tenant;
}

std::string unknown_session_message(std::string_view session_id, const std::string& gateway_id) {
  const std::size_t dot = session_id.find('.');
  if (!gateway_id.empty() && dot != std::string_view::npos && dot > 0) {
    const std::string_view owner = session_id.substr(0, dot);
    if (owner != gateway_id) {
      return fmt::format(
          "Session not found: it belongs to gateway '{}', which is gone (the load balancer sent "
          "this request to gateway '{}'); its per_session instances and their state are lost. "
          "Initialize a new session",
          owner, gateway_id);
    }
  }
  return "Session not found: it expired or was deleted; initialize a new session";
}

}  // namespace toolbridge::frontend
