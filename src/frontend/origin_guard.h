#pragma once
// DNS-rebinding defence: a browser page on another origin must not drive local tools, and a
// loopback listener answers only to loopback names (and the allowed origins' hosts) in Host.
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

bool origin_allowed(std::string_view origin, const std::vector<std::string>& allowed_origins);

// Empty if the request may go on; else the 403 message.
std::string rebinding_refusal(const transport::Request& req, const config::Gateway& gateway);

}  // namespace toolbridge::frontend
