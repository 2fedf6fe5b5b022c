#pragma once
// Who a request comes from, for ownership of sessions and trajectories: the tenant it names in
// X-Toolbridge-Tenant, else its IP address. With authentication, its API key's tenant (the
// header is then ignored).
#include <string>
#include <string_view>

#include "base/expected.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

inline constexpr const char* kTenantHeader = "X-Toolbridge-Tenant";

// The owner of what this request opens or names; a failure if the tenant header is not 1-128
// characters of [A-Za-z0-9._:-].
base::Expected<std::string> owner_of(const transport::Exchange& ex);

// The 404 message for an Mcp-Session-Id this gateway does not hold: when the id names another
// gateway (`OWNER.` + random, gateway.gateway_id), the message says so — the balancer sent the
// session here because its gateway is gone, with the instances it held.
std::string unknown_session_message(std::string_view session_id, const std::string& gateway_id);

}  // namespace toolbridge::frontend
