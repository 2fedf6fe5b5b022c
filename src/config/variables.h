#pragma once
// ${...} in config values: ${env:NAME} in header values is replaced when the file is read (so API
// keys stay out of the file); ${session.id} and ${session.dir} in a server's args, env and cwd are
// left for the upstream to fill in per session, and only checked here.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"

namespace toolbridge::config {

// A name a shell would accept for an environment variable: [A-Za-z_][A-Za-z0-9_]*.
bool is_env_name(std::string_view s);

// `raw` with each ${env:NAME} replaced by the variable's value, or a message saying why not
// (unclosed reference, a bad name, an unset variable: a request without its key would fail less
// clearly).
base::Expected<std::string> expand_env_refs(std::string_view raw);

inline constexpr std::array<std::string_view, 2> kSessionVars{"${session.id}", "${session.dir}"};

// Every "${session." reference in `value` as written: up to its closing brace, or to the end of
// the value when there is none. Other ${...} text is not a reference: servers never run in a
// shell, so it reaches them untouched.
std::vector<std::string> session_var_refs(std::string_view value);

}  // namespace toolbridge::config
