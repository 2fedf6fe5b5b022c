#pragma once
// A trajectory named by the transport rather than by a call's _meta: the path /t/NAME/mcp (or
// /t/NAME/sse) and the header X-Toolbridge-Trajectory. Frameworks that open a new MCP session
// for every call cannot set _meta, but all of them let the user set the URL and headers. Both
// mean the same global name as _meta["toolbridge/session"]; two that differ are refused, never
// guessed between.
#include <optional>
#include <string>
#include <string_view>

#include "base/expected.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

inline constexpr const char* kTrajectoryHeader = "X-Toolbridge-Trajectory";
inline constexpr std::string_view kTrajectoryPrefix = "/t/";

// `/t/NAME/ENDPOINT` split into NAME (percent-decoded, not yet checked) and ENDPOINT ("mcp",
// "sse"); nullopt for any other shape.
struct TrajectoryPath {
  std::string name;
  std::string_view endpoint;
};
std::optional<TrajectoryPath> split_trajectory_path(std::string_view path);

// The trajectory a request names by its path (`from_path`, empty if it came to /mcp or /sse)
// and its X-Toolbridge-Trajectory header: empty if neither names one. A failure when a name
// breaks the rule or the two name different trajectories.
base::Expected<std::string> named_trajectory(const transport::Request& req,
                                             std::string_view from_path);

// Success when a request that names `named` (maybe empty) may use a session opened for
// `session_trajectory` (maybe empty); else why not. A session belongs to one trajectory for life.
base::Status check_session_trajectory(const std::string& session_trajectory,
                                      std::string_view named);

std::string percent_decode(std::string_view text);

}  // namespace toolbridge::frontend
