#include "config/server_section.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <span>
#include <string_view>

#include "config/server_keys.h"
#include "config/variables.h"

namespace toolbridge::config {
namespace {

using Marks = std::map<std::string, Mark, std::less<>>;

// Keys that only mean something for some policies, checked after the whole entry is read.
constexpr std::array<std::string_view, 2> kPoolOnlyKeys{"min_instances", "target_in_flight"};
constexpr std::array<std::string_view, 2> kPerSessionOnlyKeys{"rebind_on_exit", "keep_session_dir"};
constexpr std::array<std::string_view, 3> kNotSharedKeys{"max_instances", "spares",
                                                         "checkout_timeout"};
// Keys that belong to one kind of server only (stdio command vs remote url).
constexpr std::array<std::string_view, 6> kStdioOnlyKeys{
    "args", "env", "inherit_env", "cwd", "max_rss_mb", "max_write_queue_bytes"};
constexpr std::array<std::string_view, 6> kRemoteOnlyKeys{
    "transport", "headers", "tls_verify", "ca_file", "max_connections", "connect_timeout"};

bool contains(std::span<const std::string_view> keys, std::string_view key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// A server is either stdio (command) or remote (url); keys of the other kind are errors rather
// than silently ignored.
void check_kind(const NodeReader& r, const Entry& entry, const std::string& path,
                const ServerDraft& d) {
  if (d.has_command && d.url_mark) {
    r.fail(*d.url_mark, join_path(path, d.url_key),
           "a server has either 'command' (stdio) or 'url' (remote), not both");
  }
  if (!d.has_command && !d.url_mark) {
    r.fail(entry.key_mark, path,
           "missing required key 'command' (the program to run, like npx or uvx) or 'url' (a "
           "remote server)");
  }
  if (d.type_mark && d.type_is_stdio == bool(d.url_mark)) {
    r.fail(*d.type_mark, join_path(path, "type"),
           d.url_mark ? "'stdio' contradicts 'url'; use http, streamable-http or sse"
                      : "a remote type needs 'url'");
  }
  for (const auto& [key, mark] : d.marks) {
    if (contains(kStdioOnlyKeys, key) && d.url_mark) {
      r.fail(mark, join_path(path, key),
             "applies only to stdio servers (command); this one has a url");
    }
    if (contains(kRemoteOnlyKeys, key) && !d.url_mark) {
      r.fail(mark, join_path(path, key), "applies only to remote servers (url)");
    }
  }
}

// ${session.id} / ${session.dir} exist only for per_session servers.
void check_session_vars(const NodeReader& r, const Entry& entry, const std::string& path,
                        const Server& s, const Marks& marks) {
  const std::string_view policy = to_string(s.policy);
  auto check = [&](const std::string& value, const std::string& where) {
    for (const std::string& var : session_var_refs(value)) {
      const Mark mark = marks.count(where) ? marks.at(where) : entry.key_mark;
      if (std::find(kSessionVars.begin(), kSessionVars.end(), var) == kSessionVars.end()) {
        r.fail(
            mark, join_path(path, where),
            fmt::format("unknown variable '{}' (known: ${{session.id}}, ${{session.dir}})", var));
      }
      if (s.policy != Policy::kPerSession) {
        r.fail(mark, join_path(path, where),
               fmt::format("'{}' needs policy: per_session (each session gets its own process); "
                           "this server's policy is {}",
                           var, policy));
      }
    }
  };
  for (const auto& a : s.args) check(a, "args");
  for (const auto& [k, v] : s.env) check(v, "env");
  check(s.cwd, "cwd");
  if (s.spares && *s.spares > 0 && s.uses_session_var("${session.id}")) {
    r.fail(marks.at("spares"), join_path(path, "spares"),
           "spares start before their session exists, so they cannot use ${session.id}; use "
           "${session.dir} (created with the spare and handed to its session) or spares: 0");
  }
}

// Keys that do not apply to the server's policy are errors rather than silently ignored.
void check_policy(const NodeReader& r, const Entry& entry, const std::string& path, const Server& s,
                  const Marks& marks) {
  const std::string_view policy = to_string(s.policy);
  auto misplaced = [&](std::span<const std::string_view> keys, std::string_view applies_to) {
    for (std::string_view key : keys) {
      if (auto it = marks.find(key); it != marks.end()) {
        r.fail(it->second, join_path(path, std::string(key)),
               fmt::format("applies only to {}; this server's policy is {}", applies_to, policy));
      }
    }
  };
  if (s.policy != Policy::kPool) misplaced(kPoolOnlyKeys, "policy: pool");
  if (s.policy != Policy::kPerSession) misplaced(kPerSessionOnlyKeys, "policy: per_session");
  if (s.policy == Policy::kShared) misplaced(kNotSharedKeys, "policy: pool or per_session");
  if (s.policy == Policy::kPool && s.min_instances > s.effective_max_instances()) {
    r.fail(marks.at("min_instances"), join_path(path, "min_instances"),
           fmt::format("{} is more than max_instances ({})", s.min_instances,
                       s.effective_max_instances()));
  }
  if (s.policy != Policy::kShared && s.spares && *s.spares > s.effective_max_instances()) {
    r.fail(marks.at("spares"), join_path(path, "spares"),
           fmt::format("{} is more than max_instances ({})", s.effective_spares(),
                       s.effective_max_instances()));
  }
  check_session_vars(r, entry, path, s, marks);
}

Server read_server(const NodeReader& r, const Entry& entry, const std::string& path) {
  ServerDraft d;
  d.server.name = entry.key;
  NodeReader::Seen seen;
  // Entries in JSON may carry keys for other clients (autoApprove, alwaysAllow, ...).
  for (const Entry& e : r.entries(entry.value, path)) {
    if (!r.check_key(e, path, kServerKeys, /*lenient=*/r.json(), seen, kForeignServerKeys))
      continue;
    d.marks.emplace(e.key, e.key_mark);
    if (ServerKeyReader read = server_key_reader(e.key)) read(r, e, join_path(path, e.key), d);
  }
  check_kind(r, entry, path, d);
  if (d.enabled && d.disabled && d.enabled->first == d.disabled->first) {
    r.fail(d.disabled->second, join_path(path, "disabled"),
           "contradicts 'enabled'; keep one of the two");
  }
  Server& s = d.server;
  if (d.enabled) s.enabled = d.enabled->first;
  if (d.disabled) s.enabled = !d.disabled->first;
  if (d.foreign_timeout && !d.call_timeout_set) s.call_timeout = *d.foreign_timeout;
  check_policy(r, entry, path, s, d.marks);
  if (auto it = d.marks.find("adaptive"); it != d.marks.end() && !s.adaptive_limit) {
    r.fail(it->second, join_path(path, "adaptive"),
           "applies only with concurrency_limit: adaptive");
  }
  return std::move(d.server);
}

}  // namespace

void read_servers(const NodeReader& r, const Node& node, const std::string& path, Config& config) {
  const std::string& separator = config.gateway.separator;
  NodeReader::Seen names;
  for (const Entry& e : r.entries(node, path)) {
    const bool valid = !e.key.empty() && e.key.size() <= 64 &&
                       std::all_of(e.key.begin(), e.key.end(), is_name_char);
    if (!valid) {
      r.fail(e.key_mark, path,
             fmt::format("server name '{}' must be 1-64 letters, digits, '_' or '-'", e.key));
    }
    if (e.key.find(separator) != std::string::npos) {
      r.fail(e.key_mark, path,
             fmt::format("server name '{}' must not contain '{}': it joins server and tool names "
                         "in namespaced tools ({}{}tool)",
                         e.key, separator, e.key, separator));
    }
    auto [it, inserted] = names.emplace(e.key, e.key_mark);
    if (!inserted) {
      r.fail(e.key_mark, path,
             fmt::format("duplicate server name '{}' (lines {} and {})", e.key, it->second.line,
                         e.key_mark.line));
    }
    config.servers.push_back(read_server(r, e, join_path(path, e.key)));
  }
}

}  // namespace toolbridge::config
