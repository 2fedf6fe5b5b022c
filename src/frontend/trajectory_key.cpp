#include "frontend/trajectory_key.h"

#include "call/trajectory_name.h"
#include "frontend/router.h"

namespace toolbridge::frontend {

std::string percent_decode(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::optional<TrajectoryPath> split_trajectory_path(std::string_view path) {
  if (!path.starts_with(kTrajectoryPrefix)) return std::nullopt;
  const std::string_view rest = path.substr(kTrajectoryPrefix.size());
  const std::size_t slash = rest.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  // The name is percent-encoded, so an encoded '/' stays inside it and is refused by the rule.
  return TrajectoryPath{percent_decode(rest.substr(0, slash)), rest.substr(slash + 1)};
}

base::Expected<std::string> named_trajectory(const transport::Request& req,
                                             std::string_view from_path) {
  std::string from_header(header(req, kTrajectoryHeader));
  if (!from_path.empty()) {
    if (base::Status named = call::check_trajectory_name(from_path); !named)
      return base::fail("the trajectory in the URL path (/t/NAME/...): " + named.error());
  }
  if (!from_header.empty()) {
    if (base::Status named = call::check_trajectory_name(from_header); !named)
      return base::fail(std::string(kTrajectoryHeader) + ": " + named.error());
  }
  if (!from_path.empty() && !from_header.empty() && from_path != from_header) {
    return base::fail("the URL path names trajectory '" + std::string(from_path) + "' but " +
                      kTrajectoryHeader + " names '" + from_header +
                      "'; name one trajectory (they mean the same thing)");
  }
  if (from_path.empty()) return from_header;
  return std::string(from_path);
}

base::Status check_session_trajectory(const std::string& session_trajectory,
                                      std::string_view named) {
  if (named.empty() || named == session_trajectory) return {};
  if (session_trajectory.empty()) {
    return base::fail(
        "this request names trajectory '" + std::string(named) +
        "' but its session was opened without one; open the session with the same URL or " +
        kTrajectoryHeader + " as its requests");
  }
  return base::fail("this request names trajectory '" + std::string(named) +
                    "' but its session was opened for '" + session_trajectory +
                    "'; a session belongs to one trajectory (open another session for another)");
}

}  // namespace toolbridge::frontend
