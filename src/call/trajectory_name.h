#pragma once
// Trajectory names come from callers (_meta["toolbridge/session"], toolbridge/release,
// DELETE /sessions/NAME) and key per_session instances. They are checked where they enter, so
// no option-like, path-like or invisible text is kept; they never reach a server's argv, env or
// cwd either: ${session.id} is derived from the name, not the name itself.
#include <cstddef>
#include <string>
#include <string_view>

#include "base/expected.h"

namespace toolbridge::call {

inline constexpr std::size_t kMaxTrajectoryNameChars = 256;

// The rule, as error messages state it.
inline constexpr std::string_view kTrajectoryNameRule =
    "a trajectory name is 1 to 256 characters (not bytes): letters and digits of any script and "
    ". _ - : @ +, starting with a letter, a digit or _";

// Success when `name` follows the rule; otherwise what breaks it (which character, or the
// length) followed by the rule.
base::Status check_trajectory_name(std::string_view name);

}  // namespace toolbridge::call
