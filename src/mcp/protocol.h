#pragma once
// MCP protocol versions and what each allows. Downstream (agents) and upstream (servers) are
// negotiated separately; the gateway consults these before forwarding anything.
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace toolbridge::mcp {

enum class Version { k2025_03_26, k2025_06_18, k2025_11_25 };

inline constexpr std::array<Version, 3> kSupportedVersions = {
    Version::k2025_11_25, Version::k2025_06_18, Version::k2025_03_26};
inline constexpr Version kLatestVersion = Version::k2025_11_25;
// Assumed by Streamable HTTP when a client sends no MCP-Protocol-Version header.
inline constexpr Version kDefaultHttpVersion = Version::k2025_03_26;

std::string_view to_string(Version v);
std::optional<Version> parse_version(std::string_view s);

// Server side of initialize: the client's requested version if we support it, else our latest
// (the client then decides whether to continue, as the spec says).
Version negotiate(std::string_view requested);

// JSON-RPC batches exist only in 2025-03-26.
inline bool allows_batches(Version v) { return v == Version::k2025_03_26; }
// elicitation/create appeared in 2025-06-18.
inline bool has_elicitation(Version v) { return v >= Version::k2025_06_18; }
// Streamable HTTP requests must carry MCP-Protocol-Version from 2025-06-18 on.
inline bool requires_version_header(Version v) { return v >= Version::k2025_06_18; }

// What a peer declared in initialize, reduced to the bits routing decisions need.
struct ClientCapabilities {
  bool sampling = false;
  bool elicitation = false;
  bool roots = false;
  bool roots_list_changed = false;
};
struct ServerCapabilities {
  bool tools = false;
  bool tools_list_changed = false;
  bool resources = false;
  bool resources_subscribe = false;
  bool prompts = false;
  bool logging = false;
  bool completions = false;
  // 2025-11-25 tasks: capabilities.tasks.requests.tools.call (a tools/call may carry `task`)
  // and capabilities.tasks.cancel.
  bool tasks_tools_call = false;
  bool tasks_cancel = false;
};

// Logging levels in the RFC 5424 order MCP uses; -1 for an unknown name.
int log_level_rank(std::string_view level);

}  // namespace toolbridge::mcp
