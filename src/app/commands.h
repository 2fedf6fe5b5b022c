#pragma once
// Subcommands of the `toolbridge` binary that talk to a running gateway.
#include <string>
#include <vector>

namespace toolbridge::app {

// Embedded default configuration (YAML): the fixture server next to the binary.
std::string default_config_yaml(const std::string& exe_dir);

int run_tools(const std::string& url, bool json_output);
int run_call(const std::string& url, const std::string& name, const std::vector<std::string>& kv,
             const std::string& json_args, bool json_output);
// `toolbridge reload`: POST /admin/reload at `url`'s origin (exit 0 applied, 1 refused, 2 no
// answer); the API key comes from TOOLBRIDGE_TOKEN.
int run_reload(const std::string& url);
// `toolbridge stdio`: serves MCP on stdin/stdout by forwarding to the gateway at `url`; with
// `server` set, only that server's tools and prompts, under their own names.
int run_stdio_shim(const std::string& url, const std::string& server);
// `toolbridge cassette dump DIR` (exit 0, 2 if unreadable) and `cassette diff A B` (exit 0 if
// no trajectory diverges, 1 if some do, 2 if a run is unreadable).
int run_cassette_dump(const std::string& dir);
int run_cassette_diff(const std::string& a, const std::string& b);

}  // namespace toolbridge::app
