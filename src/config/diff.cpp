#include "config/diff.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <map>
#include <string_view>

#include "config/node_reader.h"
#include "config/tree.h"

namespace toolbridge::config {
namespace {

// Gateway keys a reload applies in place; every other one needs a restart.
constexpr std::array<std::string_view, 18> kLiveGatewayKeys{
    "max_calls_in_flight",
    "tenant_limit",
    "trajectory_limit",
    "admission_queue_size",
    "auth",
    "allow_unauthenticated",
    "log_level",
    "watch_config",
    "max_sessions",
    "max_sessions_per_client",
    "max_trajectories_per_client",
    "session_idle_ttl",
    "session_reclaim_after",
    "shutdown_grace",
    "ready_timeout",
    "tenants",
    "tenant_rate",
    "shared_limits",
};
// Whole top-level sections a reload applies ("servers" is compared server by server).
constexpr std::array<std::string_view, 1> kLiveSections{"surfaces"};

bool same(const Node& a, const Node& b);

bool same_entries(const std::vector<Entry>& a, const std::vector<Entry>& b) {
  if (a.size() != b.size()) return false;
  // Keys in another order are the same map; duplicates are refused by the reader.
  std::map<std::string_view, const Node*> by_key;
  for (const Entry& e : a) by_key.emplace(e.key, &e.value);
  return std::all_of(b.begin(), b.end(), [&by_key](const Entry& e) {
    auto it = by_key.find(e.key);
    return it != by_key.end() && same(*it->second, e.value);
  });
}

bool same(const Node& a, const Node& b) {
  if (a.kind != b.kind || a.scalar != b.scalar || a.items.size() != b.items.size()) return false;
  for (std::size_t i = 0; i < a.items.size(); ++i) {
    if (!same(a.items[i], b.items[i])) return false;
  }
  return same_entries(a.entries, b.entries);
}

// A section's or a server's keys, by name (null when the node is not a map).
std::map<std::string, const Node*> children(const Node* node) {
  std::map<std::string, const Node*> out;
  if (!node || node->kind != Node::Kind::kMap) return out;
  for (const Entry& e : node->entries) out.emplace(e.key, &e.value);
  return out;
}

std::string section_of(std::string_view key) {
  if (key == "toolbridge") return "gateway";
  if (key == "mcpServers") return "servers";
  return std::string(key);
}

// The top-level sections by their canonical names (gateway, servers, models, surfaces).
std::map<std::string, const Node*> sections(const Node& root) {
  std::map<std::string, const Node*> out;
  if (root.kind != Node::Kind::kMap) return out;
  for (const Entry& e : root.entries) out.emplace(section_of(e.key), &e.value);
  return out;
}

const Node* find(const std::map<std::string, const Node*>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? nullptr : it->second;
}

// The keys present in either map whose values differ (or that only one has).
std::vector<std::string> changed_keys(const std::map<std::string, const Node*>& a,
                                      const std::map<std::string, const Node*>& b) {
  std::vector<std::string> out;
  for (const auto& [key, node] : a) {
    const Node* other = find(b, key);
    if (!other || !same(*node, *other)) out.push_back(key);
  }
  for (const auto& [key, node] : b) {
    if (!a.contains(key)) out.push_back(key);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void diff_servers(const Node* before, const Node* after, Diff& d) {
  const auto a = children(before);
  const auto b = children(after);
  for (const auto& [name, node] : a) {
    const Node* other = find(b, name);
    if (!other) {
      d.servers_removed.push_back(name);
    } else if (!same(*node, *other)) {
      d.servers_changed.push_back({name, changed_keys(children(node), children(other))});
    }
  }
  for (const auto& [name, node] : b) {
    if (!a.contains(name)) d.servers_added.push_back(name);
  }
}

void diff_models(const Node* before, const Node* after, Diff& d) {
  const auto a = children(before);
  const auto b = children(after);
  for (const auto& [name, node] : a) {
    const Node* other = find(b, name);
    if (!other) {
      d.models_removed.push_back(name);
    } else if (!same(*node, *other)) {
      d.models_changed.push_back(name);
    }
  }
  for (const auto& [name, node] : b) {
    if (!a.contains(name)) d.models_added.push_back(name);
  }
}

std::string joined(const std::vector<std::string>& items, std::string_view prefix) {
  std::string out;
  for (const auto& item : items) out += fmt::format(" {}{}", prefix, item);
  return out;
}

}  // namespace

bool Diff::empty() const {
  return servers_added.empty() && servers_removed.empty() && servers_changed.empty() &&
         !models_differ() && keys_changed.empty();
}

std::string Diff::summary() const {
  if (empty()) return "no change";
  std::string out;
  if (!servers_added.empty() || !servers_removed.empty() || !servers_changed.empty()) {
    out = "servers" + joined(servers_added, "+") + joined(servers_removed, "-");
    for (const auto& c : servers_changed)
      out += fmt::format(" ~{}({})", c.name, fmt::join(c.keys, ","));
  }
  if (models_differ()) {
    if (!out.empty()) out += "; ";
    out += "models" + joined(models_added, "+") + joined(models_removed, "-") +
           joined(models_changed, "~");
  }
  if (!keys_changed.empty()) {
    if (!out.empty()) out += "; ";
    out += fmt::format("keys {}", fmt::join(keys_changed, ", "));
  }
  return out;
}

namespace {

Node parse_document(const std::string& text, const std::string& source, bool json) {
  std::string_view body = text;
  if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);
  return json ? parse_json(body, source) : parse_yaml(text, source);
}

}  // namespace

bool watch_config_of(const std::string& text, const std::string& source, bool json) {
  const Node root = parse_document(text, source, json);
  const Node* watch = find(children(find(sections(root), "gateway")), "watch_config");
  return watch && NodeReader(source, json).boolean(*watch, "gateway.watch_config");
}

Diff diff_texts(const std::string& before, const std::string& after, const std::string& source,
                bool json) {
  const Node old_root = parse_document(before, source, json);
  const Node new_root = parse_document(after, source, json);
  const auto a = sections(old_root);
  const auto b = sections(new_root);
  Diff d;
  diff_servers(find(a, "servers"), find(b, "servers"), d);
  for (const auto& key : changed_keys(children(find(a, "gateway")), children(find(b, "gateway")))) {
    d.keys_changed.push_back("gateway." + key);
  }
  diff_models(find(a, "models"), find(b, "models"), d);
  const Node* x = find(a, "surfaces");
  const Node* y = find(b, "surfaces");
  if ((x == nullptr) != (y == nullptr) || (x && !same(*x, *y)))
    d.keys_changed.push_back("surfaces");
  return d;
}

std::vector<std::string> restart_only_keys(const Diff& diff) {
  std::vector<std::string> out;
  for (const auto& key : diff.keys_changed) {
    const std::string_view k = key;
    const bool live =
        k.starts_with("gateway.")
            ? std::find(kLiveGatewayKeys.begin(), kLiveGatewayKeys.end(), k.substr(8)) !=
                  kLiveGatewayKeys.end()
            : std::find(kLiveSections.begin(), kLiveSections.end(), k) != kLiveSections.end();
    if (!live) out.push_back(key);
  }
  return out;
}

}  // namespace toolbridge::config
