#pragma once
// The answers repair gives itself: an isError tool result the model can read and correct
// (the MCP spec asks for input problems as tool results, not protocol errors).
#include <string>

#include "call/call.h"
#include "call/meta_key.h"

namespace toolbridge::repair {

call::Result tool_error(const call::Call& call, const std::string& text);

inline constexpr std::string_view kRepairMetaKey = "toolbridge/repair";

// The caller's word on repair for one call (a slot of the call, read from kRepairMetaKey):
// "off", "safe", "aggressive", or empty when it said nothing.
struct Request {
  std::string mode;
};
// kRepairMetaKey, read into the call's Request.
call::MetaKey request_meta_key();

// The repair mode of one call: the configured one, capped by the call's
// _meta["toolbridge/repair"] (a caller may turn repair down for its call, never up).
config::RepairMode effective_mode(config::RepairMode configured, const call::Call& call);

}  // namespace toolbridge::repair
