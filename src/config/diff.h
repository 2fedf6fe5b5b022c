#pragma once
// What a reload changes: two texts of the config file compared section by section (servers by
// name, gateway keys one by one), and which of the changed keys a running gateway cannot take
// (docs/reload.md). Both texts are the documents as written (before ${env:} expansion, which a
// running gateway cannot see change anyway).
#include <string>
#include <vector>

namespace toolbridge::config {

struct ServerChange {
  std::string name;
  std::vector<std::string> keys;  // the server's keys that were added, removed or changed
};

struct Diff {
  std::vector<std::string> servers_added;
  std::vector<std::string> servers_removed;
  std::vector<ServerChange> servers_changed;
  // The `models` section, model by model (LLM routing).
  std::vector<std::string> models_added;
  std::vector<std::string> models_removed;
  std::vector<std::string> models_changed;
  // "gateway.KEY" for each gateway key added, removed or changed; "surfaces" for that section
  // as a whole.
  std::vector<std::string> keys_changed;

  bool empty() const;
  bool models_differ() const {
    return !models_added.empty() || !models_removed.empty() || !models_changed.empty();
  }
  // One line: "servers +a -b ~c(env,args); models +m; keys gateway.auth, surfaces", or
  // "no change".
  std::string summary() const;
};

// The differences between two config documents (YAML, or mcpServers JSON when `json`). Throws
// ConfigError (FILE:LINE:COL) if either does not parse.
Diff diff_texts(const std::string& before, const std::string& after, const std::string& source,
                bool json);

// `gateway.watch_config` of a document the reader accepted (docs/reload.md): whether the gateway
// re-reads the file when it changes on disk. Only the reloader reads it, so it is not a field of
// config::Gateway.
bool watch_config_of(const std::string& text, const std::string& source, bool json);

// The keys of `diff.keys_changed` that only a restart applies (listen address, TLS files,
// trace, otel, record, replay, the cache tiers, ...).
std::vector<std::string> restart_only_keys(const Diff& diff);

}  // namespace toolbridge::config
