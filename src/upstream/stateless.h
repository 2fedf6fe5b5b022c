#pragma once
// The client side of MCP 2026-07-28 toward a remote server that speaks it: the per-request
// envelope every request carries in params._meta and the Mcp-Method / Mcp-Name headers. The
// gateway probes server/discover before initialize; a server that lists 2026-07-28 is spoken to
// statelessly, any other answer falls back to the handshake.
#include <boost/json/value.hpp>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace toolbridge::upstream {

// A message as a stateless server must receive it, and the headers naming it.
struct StatelessMessage {
  std::string body;
  std::string method;  // Mcp-Method (requests and notifications)
  std::string name;    // Mcp-Name (tools/call, prompts/get: name; resources/read: uri), or empty
};

// `message` with the envelope merged into params._meta (requests only; its own _meta keys are
// kept). A message that is not a JSON-RPC object passes unchanged.
StatelessMessage to_stateless(std::string_view message);

// Whether a server/discover result offers the stateless revision.
bool offers_stateless(const boost::json::value& discover_result);

// Whether a JSON-RPC error object is UnsupportedProtocolVersion listing, in data.supported, a
// version the gateway speaks statelessly: the request is worth sending again (once).
bool supports_after_rejection(const boost::json::value& error);

// The server/discover request's params: the envelope alone.
std::string discover_params();

// MCP-Protocol-Version (`version`, else 2026-07-28 for the discover probe), Mcp-Method and
// Mcp-Name (as =?base64?…?= unless plain printable ASCII).
void add_stateless_headers(std::vector<std::pair<std::string, std::string>>& headers,
                           const std::string& method, const std::string& name,
                           const std::string& version);

// SEP-2243 custom headers: per tool, the parameters its inputSchema marks with `x-mcp-header`,
// as (parameter, header name suffix).
using HeaderMarks =
    std::map<std::string, std::vector<std::pair<std::string, std::string>>, std::less<>>;
// Records the marks of the tools a tools/list result lists (any other message: nothing; cheap
// when the text does not mention x-mcp-header).
void learn_header_marks(std::string_view message, HeaderMarks& marks);
// The header text of an argument: strings as they are, =?base64?…?= when not plain printable
// ASCII or with edge spaces; numbers and booleans as JSON; nullopt for other values.
std::optional<std::string> param_header_value(const boost::json::value& v);
// Mcp-Param-SUFFIX headers for a tools/call request (`body`) of tool `tool`, from its marks.
void add_param_headers(std::vector<std::pair<std::string, std::string>>& headers,
                       std::string_view body, std::string_view tool, const HeaderMarks& marks);

}  // namespace toolbridge::upstream
