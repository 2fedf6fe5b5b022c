#pragma once
// The `surfaces` section (docs/surfaces.md): named views of the gateway's tools. Each surface
// picks tools (by server, gateway name, glob or annotation), may rename and re-describe them and
// fill arguments the model never sees. Read once into an immutable Surfaces held by shared_ptr,
// so that a reload can swap the whole set at once.
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"
#include "config/config.h"
#include "config/node_reader.h"
#include "config/tree.h"

namespace toolbridge::config {

// Bounds: a surface's name is caller-visible in a URL (/s/NAME/mcp) and a header.
inline constexpr std::size_t kMaxSurfaceName = 64;
inline constexpr std::size_t kMaxSurfaces = 1024;
inline constexpr std::size_t kMaxSurfaceSelectors = 256;
inline constexpr std::size_t kMaxSurfaceGlob = 256;

// One rule of `include` or `exclude`: a tool matches when every key written matches.
struct SurfaceSelector {
  std::string server;      // the tool's server
  std::string name;        // the tool's gateway name (as /mcp lists it)
  std::string glob;        // `*` and `?` over the gateway name
  std::string annotation;  // a hint the tool declares true (readOnlyHint, ...)
};

// `surfaces.NAME.tools.GATEWAY_NAME`: what the surface changes of one tool (and picks it).
struct SurfaceTool {
  std::string name;  // the name the model sees; empty: the gateway name
  std::optional<std::string> description;
  std::optional<std::string> title;
  // Argument values filled in on every call and removed from the schema the model sees, as a
  // JSON object's text; empty: none.
  std::string defaults;
};

struct Surface {
  std::string name;
  std::vector<SurfaceSelector> include;
  std::vector<SurfaceSelector> exclude;
  std::map<std::string, SurfaceTool, std::less<>> tools;  // by gateway name
};

struct Surfaces {
  std::vector<Surface> list;  // in file order
  const Surface* find(std::string_view name) const;
};

// Whether `name` may name a surface (1-64 characters of [A-Za-z0-9_-]), else why not.
base::Status check_surface_name(std::string_view name);
// The selectable annotations (the MCP tool annotation hints).
std::span<const std::string_view> surface_annotations();

// Reads the section into config.surfaces (after the servers: selectors name servers).
void read_surfaces(const NodeReader& r, const Node& node, const std::string& path, Config& config);
// Every surface an API key names (`gateway`'s auth.keys[].surfaces; `gateway` may be null) is
// defined in `surfaces`; throws ConfigError at the name if not.
void check_key_surfaces(const NodeReader& r, const Entry* gateway, const Config& config);
// The keys of one surface and of one tool entry (docs/configuration.md lists exactly these).
std::span<const std::string_view> surface_keys();
std::span<const std::string_view> surface_tool_keys();
std::span<const std::string_view> surface_selector_keys();

}  // namespace toolbridge::config
