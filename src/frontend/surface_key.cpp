#include "frontend/surface_key.h"

#include "config/surfaces.h"
#include "frontend/router.h"
#include "frontend/trajectory_key.h"

namespace toolbridge::frontend {

namespace {
// NAME/ENDPOINT after a prefix: both one segment (an encoded '/' stays inside the name).
std::optional<std::pair<std::string, std::string_view>> name_and_endpoint(std::string_view rest) {
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  const std::string_view endpoint = rest.substr(slash + 1);
  if (endpoint.empty() || endpoint.find('/') != std::string_view::npos) return std::nullopt;
  return std::pair{percent_decode(rest.substr(0, slash)), endpoint};
}
}  // namespace

std::optional<SurfacePath> split_surface_path(std::string_view path) {
  SurfacePath out;
  if (path.starts_with(kTrajectoryPrefix)) {
    const std::string_view rest = path.substr(kTrajectoryPrefix.size());
    const std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos || slash == 0) return std::nullopt;
    out.trajectory = percent_decode(rest.substr(0, slash));
    path = rest.substr(slash);
  }
  if (!path.starts_with(kSurfacePrefix)) return std::nullopt;
  auto parts = name_and_endpoint(path.substr(kSurfacePrefix.size()));
  if (!parts) return std::nullopt;
  out.surface = std::move(parts->first);
  out.endpoint = parts->second;
  return out;
}

base::Expected<std::string> named_surface(const transport::Request& req, std::string_view from_path,
                                          const surfaces::Registry& registry) {
  std::string from_header(header(req, kSurfaceHeader));
  for (const auto& [name, where] : {std::pair<std::string_view, std::string>{
                                        from_path, "the surface in the URL path (/s/NAME/...)"},
                                    {from_header, kSurfaceHeader}}) {
    if (name.empty()) continue;
    if (base::Status named = config::check_surface_name(name); !named)
      return base::fail(where + ": " + named.error());
    if (!registry.has(name)) return base::fail(where + ": " + registry.unknown_message(name));
  }
  if (!from_path.empty() && !from_header.empty() && from_path != from_header) {
    return base::fail("the URL path names surface '" + std::string(from_path) + "' but " +
                      kSurfaceHeader + " names '" + from_header + "'; name one surface");
  }
  if (from_path.empty()) return from_header;
  return std::string(from_path);
}

base::Status check_session_surface(const std::string& session_surface, std::string_view named) {
  if (named.empty() || named == session_surface) return {};
  if (session_surface.empty()) {
    return base::fail(
        "this request names surface '" + std::string(named) +
        "' but its session was opened without one; open the session with the same URL or " +
        kSurfaceHeader + " as its requests");
  }
  return base::fail("this request names surface '" + std::string(named) +
                    "' but its session was opened on '" + session_surface +
                    "'; a session shows one surface (open another session for another)");
}

base::Status check_key_surface(const config::ApiKey& key, const transport::Request& req,
                               std::string_view path) {
  // A batch's or a parse request's body may name the surface: their handlers check it.
  if (key.surfaces.empty() || path == "/v1/batch" || path == "/v1/parse" ||
      path.starts_with("/v1/parse/streams"))
    return {};
  std::string named;
  if (auto split = split_surface_path(path)) {
    named = split->surface;
  } else if (path == "/mcp" || path == "/v1/tools" || path == "/sse" || path == "/messages") {
    named = std::string(header(req, kSurfaceHeader));
  }
  // Any other path (the catalog, the trajectories, the metrics) names none: it shows more.
  return check_key_surface(key, named);
}

base::Status check_key_surface(const config::ApiKey& key, const std::string& named) {
  if (key.surfaces.empty()) return {};
  for (const std::string& s : key.surfaces) {
    if (s == named) return {};
  }
  std::string list;
  for (const std::string& s : key.surfaces) list += (list.empty() ? "" : ", ") + s;
  const std::string what = named.empty()
                               ? std::string("this request names no surface")
                               : "this request names surface '" + named.substr(0, 64) + "'";
  return base::fail("API key '" + key.name + "' may only use the tool surfaces " + list +
                    " (/s/NAME/mcp or " + kSurfaceHeader + "); " + what);
}

}  // namespace toolbridge::frontend
