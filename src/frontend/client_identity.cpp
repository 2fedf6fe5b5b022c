#include "frontend/client_identity.h"

#include <algorithm>

#include "frontend/router.h"

namespace toolbridge::frontend {

std::string owner_of(const transport::Exchange& ex, std::string& error) {
  const std::string tenant(header(ex.request(), kTenantHeader));
  if (tenant.empty()) return "address " + ex.client();
  const bool valid = tenant.size() <= 128 && std::all_of(tenant.begin(), tenant.end(), [](char c) {
                       return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':' ||
                              c == '-';
                     });
  if (!valid) {
    error = std::string(kTenantHeader) + " must be 1-128 characters of [A-Za-z0-9._:-]";
    return {};
  }
  return "tenant " + tenant;
}

}  // namespace toolbridge::frontend
