#pragma once
// A tool surface named by the transport: the path /s/NAME/mcp (also /t/TRAJECTORY/s/NAME/mcp)
// and the header X-Toolbridge-Surface. Like a trajectory, a session is opened on one surface
// for life; a request that names another is refused, never guessed between.
#include <optional>
#include <string>
#include <string_view>

#include "base/expected.h"
#include "surfaces/registry.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

inline constexpr const char* kSurfaceHeader = "X-Toolbridge-Surface";
inline constexpr std::string_view kSurfacePrefix = "/s/";

// `/s/NAME/ENDPOINT` or `/t/TRAJECTORY/s/NAME/ENDPOINT` split into its parts (names
// percent-decoded, not yet checked; `trajectory` empty for the first form); nullopt for any
// other shape.
struct SurfacePath {
  std::string trajectory;
  std::string surface;
  std::string_view endpoint;
};
std::optional<SurfacePath> split_surface_path(std::string_view path);

// The surface a request names by its path (`from_path`, empty if none) and its
// X-Toolbridge-Surface header: empty if neither names one. A failure when a name breaks the
// rule, names no configured surface, or the two name different surfaces.
base::Expected<std::string> named_surface(const transport::Request& req, std::string_view from_path,
                                          const surfaces::Registry& registry);

// Success when a request that names `named` (maybe empty) may use a session opened on
// `session_surface` (maybe empty); else why not.
base::Status check_session_surface(const std::string& session_surface, std::string_view named);

// Success when API key `key` may send a request to `path`: a key restricted to surfaces
// (auth.keys[].surfaces) reaches only MCP requests and /v1/tools that name one of its surfaces by
// path or header, and /v1/batch (whose body may name the surface: checked with it); else why
// not.
base::Status check_key_surface(const config::ApiKey& key, const transport::Request& req,
                               std::string_view path);
// Success when API key `key` may use surface `named` (empty: none, the whole catalog).
base::Status check_key_surface(const config::ApiKey& key, const std::string& named);

}  // namespace toolbridge::frontend
