#pragma once
// The keys of one server entry and how each is read on its own. Checks across keys (command or
// url, keys of the other kind of server, keys of another policy) run once the whole entry is
// read (server_section.cpp).
#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "config/config.h"
#include "config/node_reader.h"
#include "config/tree.h"

namespace toolbridge::config {

inline constexpr std::array<std::string_view, 56> kServerKeys{
    "command",
    "args",
    "env",
    "inherit_env",
    "cwd",
    "enabled",
    "startup_timeout",
    "call_timeout",
    "tool_timeouts",
    "restart_backoff",
    "stop_grace",
    "ping_timeout",
    "max_line_bytes",
    "max_in_flight",
    "max_write_queue_bytes",
    "max_server_requests",
    "server_request_timeout",
    "log_garbage_lines",
    "log_stderr_lines",
    "log_interval",
    "idempotent_tools",
    "task_tools",
    "max_retries",
    "breaker_threshold",
    "breaker_cooldown",
    "policy",
    "min_instances",
    "max_instances",
    "spares",
    "target_in_flight",
    "checkout_timeout",
    "max_calls",
    "max_age",
    "max_rss_mb",
    "rss_check_interval",
    "idle_ttl",
    "rebind_on_exit",
    "keep_session_dir",
    "url",
    "transport",
    "type",
    "headers",
    "tls_verify",
    "ca_file",
    "max_connections",
    "connect_timeout",
    "error_prefix",
    "concurrency_limit",
    "adaptive",
    "tool_limits",
    "repair",
    "validate",
    "param_aliases",
    "tool_repair",
    "cache",
    "record",
};
// Keys other MCP clients write into the same entries, which we interpret rather than ignore.
inline constexpr std::array<std::string_view, 4> kForeignServerKeys{"disabled", "timeout",
                                                                    "serverUrl", "httpUrl"};

// One server entry as it is read: the Server so far, and what the checks across keys need.
struct ServerDraft {
  Server server;
  std::map<std::string, Mark, std::less<>> marks;  // where each key was written
  std::optional<std::pair<bool, Mark>> enabled;
  std::optional<std::pair<bool, Mark>> disabled;
  bool call_timeout_set = false;
  std::optional<Duration> foreign_timeout;  // another client's "timeout"
  bool has_command = false;
  std::optional<Mark> url_mark;
  std::string url_key;    // url, serverUrl or httpUrl: the one that was written
  bool type_set = false;  // the transport was chosen by `transport` or `type`
  std::optional<Mark> type_mark;
  bool type_is_stdio = false;
};

// Reads the value of `e` (whose path is `path`) into the draft.
using ServerKeyReader = void (*)(const NodeReader& r, const Entry& e, const std::string& path,
                                 ServerDraft& d);

// The reader of a key of kServerKeys or kForeignServerKeys; nullptr for any other key.
ServerKeyReader server_key_reader(std::string_view key);
// The readers of the repair keys (repair_keys.cpp); nullptr for any other key.
ServerKeyReader repair_key_reader(std::string_view key);
// The reader of the cache key (cache_keys.cpp); nullptr for any other key.
ServerKeyReader cache_key_reader(std::string_view key);

}  // namespace toolbridge::config
