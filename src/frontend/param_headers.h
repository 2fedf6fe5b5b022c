#pragma once
// SEP-2243 custom headers: a tool whose inputSchema marks a parameter with `x-mcp-header: Name`
// has that argument's value repeated in an `Mcp-Param-Name` request header (for routing
// intermediaries), =?base64?…?= when it is not plain text. A stateless (2026-07-28) server must
// check the two agree.
#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mcp/revision.h"

namespace toolbridge::frontend {

using HeaderParams = std::vector<std::pair<std::string, std::string>>;  // (parameter, suffix)

// The first disagreement between the tool's marked arguments and the Mcp-Param-* headers, as a
// HeaderMismatch (-32020) rejection: a header missing while the argument is present, present
// while the argument is absent, repeated, badly encoded, or naming another value.
std::optional<mcp::Rejection> check_param_headers(const boost::json::object& arguments,
                                                  const HeaderParams& params,
                                                  const mcp::HeaderView& headers);

}  // namespace toolbridge::frontend
