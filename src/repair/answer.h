#pragma once
// The answers repair gives itself: an isError tool result the model can read and correct
// (the MCP spec asks for input problems as tool results, not protocol errors).
#include <string>

#include "call/call.h"

namespace toolbridge::repair {

gateway::Result tool_error(const gateway::Call& call, const std::string& text);

// The repair mode of one call: the configured one, capped by the call's
// _meta["toolbridge/repair"] (a caller may turn repair down for its call, never up).
config::RepairMode effective_mode(config::RepairMode configured, const gateway::Call& call);

}  // namespace toolbridge::repair
