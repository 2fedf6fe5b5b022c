#pragma once
// MCP 2026-07-28, the stateless revision: no initialize handshake and no Mcp-Session-Id; every
// request carries its protocol version and client capabilities in params._meta, and over HTTP
// repeats the version, method and name in MCP-Protocol-Version, Mcp-Method and Mcp-Name. This
// file holds the revision's vocabulary and its validation ladder, with no I/O.
#include <boost/json/object.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace toolbridge::mcp {

inline constexpr std::string_view kStatelessVersion = "2026-07-28";
inline constexpr std::string_view kVersionMeta = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view kCapabilitiesMeta = "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view kClientInfoMeta = "io.modelcontextprotocol/clientInfo";
inline constexpr std::string_view kLogLevelMeta = "io.modelcontextprotocol/logLevel";
inline constexpr std::string_view kServerInfoMeta = "io.modelcontextprotocol/serverInfo";
inline constexpr std::string_view kSubscriptionIdMeta = "io.modelcontextprotocol/subscriptionId";
// toolbridge's own: params._meta key of a server→client request naming its key in a stateless
// agent's `inputRequests` (removed before any agent sees the request).
inline constexpr std::string_view kInputKeyMeta = "toolbridge/input_key";

// The revision's own JSON-RPC error codes.
inline constexpr int kHeaderMismatch = -32020;
inline constexpr int kMissingClientCapability = -32021;
inline constexpr int kUnsupportedProtocolVersion = -32022;

// A version this gateway serves statelessly (only 2026-07-28 so far).
bool is_stateless_version(std::string_view v);
// Every version the gateway speaks to clients, oldest first, as a JSON array.
std::string all_versions_json();

// What a request's envelope says about its client.
struct StatelessEnvelope {
  std::string version;
  boost::json::object capabilities;  // clientCapabilities (empty if not an object)
  bool sampling = false, elicitation = false, roots = false;
  std::string log_level;  // io.modelcontextprotocol/logLevel, empty if absent
};

// The first rung of the ladder a request failed, as a JSON-RPC error.
struct Rejection {
  int code = 0;
  std::string message;
  std::string data;  // raw JSON, empty if none
};

// Reads an HTTP header: nullopt if absent. `count` says how many times it appears.
struct HeaderView {
  std::function<std::optional<std::string_view>(std::string_view)> get;
  std::function<std::size_t(std::string_view)> count;
};

// The ladder, first failure wins: a routing header repeated → HeaderMismatch; _meta missing or
// without the version/capabilities pair → InvalidParams; MCP-Protocol-Version, Mcp-Method and
// (tools/call, prompts/get, resources/read) Mcp-Name not equal to the body → HeaderMismatch; a
// version not served → UnsupportedProtocolVersion naming the supported ones.
std::optional<Rejection> classify(const boost::json::object& request, const HeaderView& headers,
                                  StatelessEnvelope& out);

// The HTTP status of a JSON-RPC error code on the stateless transport.
int http_status_for(int code);

// `Mcp-Name` values may be sent as =?base64?…?= when not plain printable ASCII; nullopt if the
// sentinel is malformed.
std::optional<std::string> decode_header_value(std::string_view value);

}  // namespace toolbridge::mcp
