#pragma once
// The repairs of a call, added to its result as _meta["toolbridge/repairs"]: spliced into the
// server's raw response (object_members / rewrite_object), the payload never re-serialised.
#include <string>
#include <string_view>
#include <vector>

#include "call/call.h"

namespace toolbridge::repair {

// [{"kind", "path"?, "from", "to"}, ...] as raw JSON.
std::string repairs_json(const std::vector<call::CallRepair>& repairs);

// `response` (a JSON-RPC response) with `repairs` (raw JSON) as result._meta's
// "toolbridge/repairs". An error response, or a result that is not an object, comes back as is.
std::string with_repairs(std::string_view response, std::string_view repairs);

}  // namespace toolbridge::repair
