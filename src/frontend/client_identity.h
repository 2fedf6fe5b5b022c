#pragma once
// Who a request comes from, for ownership of sessions and trajectories: the tenant it names in
// X-Toolbridge-Tenant, else its IP address. (With authentication, the token's tenant.)
#include <string>

#include "transport/http_server.h"

namespace toolbridge::frontend {

inline constexpr const char* kTenantHeader = "X-Toolbridge-Tenant";

// The owner of what this request opens or names; empty with `error` set if the tenant header is
// not 1-128 characters of [A-Za-z0-9._:-].
std::string owner_of(const transport::Exchange& ex, std::string& error);

}  // namespace toolbridge::frontend
