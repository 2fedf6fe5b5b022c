// The `surfaces` section: surfaces.NAME.{include, exclude, tools}.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <charconv>
#include <memory>

#include "config/suggestion.h"
#include "config/surfaces.h"

namespace toolbridge::config {
namespace {

namespace bj = boost::json;

constexpr std::array<std::string_view, 3> kSurfaceKeys{"include", "exclude", "tools"};
constexpr std::array<std::string_view, 4> kToolKeys{"name", "description", "title", "defaults"};
constexpr std::array<std::string_view, 4> kSelectorKeys{"server", "name", "glob", "annotation"};
constexpr std::array<std::string_view, 4> kAnnotations{"readOnlyHint", "destructiveHint",
                                                       "idempotentHint", "openWorldHint"};
constexpr std::size_t kMaxToolName = 64;
constexpr std::size_t kMaxText = 64 * 1024;  // a description or title

bool valid_tool_name(std::string_view name) {
  return !name.empty() && name.size() <= kMaxToolName &&
         std::all_of(name.begin(), name.end(), is_name_char);
}

// A YAML scalar has no type of its own: one that reads as a JSON number, true, false or null is
// that; anything else is a string (JSON files keep their numbers' and booleans' spelling).
bj::value scalar_value(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  if (text == "null") return nullptr;
  if (!text.empty() && (text[0] == '-' || (text[0] >= '0' && text[0] <= '9'))) {
    boost::system::error_code ec;
    bj::value v = bj::parse(text, ec);
    if (!ec && v.is_number()) return v;
  }
  return bj::string(text);
}

bj::value to_json(const NodeReader& r, const Node& n, const std::string& path) {
  switch (n.kind) {
    case Node::Kind::kNull:
      return nullptr;
    case Node::Kind::kScalar:
      return scalar_value(r.text(n, path));
    case Node::Kind::kList: {
      bj::array out;
      for (std::size_t i = 0; i < n.items.size(); ++i)
        out.push_back(to_json(r, n.items[i], fmt::format("{}[{}]", path, i)));
      return out;
    }
    case Node::Kind::kMap:
      break;
  }
  bj::object out;
  NodeReader::Seen seen;
  for (const Entry& e : n.entries) {
    if (!seen.emplace(e.key, e.key_mark).second)
      r.fail(e.key_mark, path, fmt::format("duplicate key '{}'", e.key));
    out[e.key] = to_json(r, e.value, join_path(path, e.key));
  }
  return out;
}

SurfaceSelector read_selector(const NodeReader& r, const Node& node, const std::string& path,
                              const Config& config) {
  SurfaceSelector s;
  NodeReader::Seen seen;
  for (const Entry& e : r.entries(node, path)) {
    r.check_key(e, path, kSelectorKeys, /*lenient=*/false, seen);
    const std::string p = join_path(path, e.key);
    const std::string& v = r.text(e.value, p);
    if (e.key == "server") {
      std::vector<std::string_view> names;
      for (const Server& server : config.servers) names.push_back(server.name);
      if (std::find(names.begin(), names.end(), v) == names.end()) {
        std::string msg = fmt::format("no server '{}' is configured", v);
        if (auto near = closest(v, names)) msg += fmt::format(" (did you mean '{}'?)", *near);
        r.fail(e.value.mark, p, msg);
      }
      s.server = v;
    } else if (e.key == "name") {
      if (!valid_tool_name(v))
        r.fail(e.value.mark, p, "a tool name is 1-64 characters of [A-Za-z0-9_-]");
      s.name = v;
    } else if (e.key == "glob") {
      if (v.empty() || v.size() > kMaxSurfaceGlob)
        r.fail(e.value.mark, p, fmt::format("a glob is 1-{} characters", kMaxSurfaceGlob));
      s.glob = v;
    } else {
      s.annotation = std::string(r.one_of(e.value, p, kAnnotations));
    }
  }
  if (seen.empty()) {
    r.fail(node.mark, path,
           fmt::format("an empty rule matches nothing; give one or more of: {}",
                       join_words(kSelectorKeys)));
  }
  return s;
}

std::vector<SurfaceSelector> read_selectors(const NodeReader& r, const Node& node,
                                            const std::string& path, const Config& config) {
  std::vector<SurfaceSelector> out;
  const auto& list = r.items(node, path);
  if (list.size() > kMaxSurfaceSelectors)
    r.fail(node.mark, path, fmt::format("at most {} rules", kMaxSurfaceSelectors));
  for (std::size_t i = 0; i < list.size(); ++i)
    out.push_back(read_selector(r, list[i], fmt::format("{}[{}]", path, i), config));
  return out;
}

std::string read_long_text(const NodeReader& r, const Node& n, const std::string& path) {
  const std::string& text = r.text(n, path);
  if (text.size() > kMaxText) r.fail(n.mark, path, "at most 64KiB");
  return text;
}

SurfaceTool read_tool(const NodeReader& r, const Node& node, const std::string& path) {
  SurfaceTool t;
  NodeReader::Seen seen;
  for (const Entry& e : r.entries(node, path)) {
    r.check_key(e, path, kToolKeys, /*lenient=*/false, seen);
    const std::string p = join_path(path, e.key);
    if (e.key == "name") {
      t.name = r.text(e.value, p);
      if (!valid_tool_name(t.name)) {
        r.fail(e.value.mark, p,
               fmt::format("'{}' is not a tool name clients accept: 1-64 characters of "
                           "[A-Za-z0-9_-]",
                           t.name));
      }
    } else if (e.key == "description") {
      t.description = read_long_text(r, e.value, p);
    } else if (e.key == "title") {
      t.title = read_long_text(r, e.value, p);
    } else {
      if (e.value.kind != Node::Kind::kMap) {
        r.fail(e.value.mark, p,
               fmt::format("expected {} of argument names and values, got {}", r.map_noun(),
                           r.describe(e.value)));
      }
      t.defaults = bj::serialize(to_json(r, e.value, p));
    }
  }
  return t;
}

// Two tools of one surface shown under one name: the model could not tell them apart.
void check_names(const NodeReader& r, const Entry& tools, const std::string& path,
                 const Surface& s) {
  std::map<std::string, const Entry*, std::less<>> shown;
  for (const Entry& e : tools.value.entries) {
    const std::string& name = s.tools.at(e.key).name.empty() ? e.key : s.tools.at(e.key).name;
    auto [it, fresh] = shown.emplace(name, &e);
    if (fresh) continue;
    r.fail(e.key_mark, join_path(path, e.key),
           fmt::format("'{}' and '{}' (line {}) are both shown as '{}'; two tools of one surface "
                       "cannot share a name",
                       e.key, it->second->key, it->second->key_mark.line, name));
  }
}

Surface read_surface(const NodeReader& r, const Entry& entry, const std::string& path,
                     const Config& config) {
  Surface s;
  s.name = entry.key;
  NodeReader::Seen seen;
  for (const Entry& e : r.entries(entry.value, path)) {
    r.check_key(e, path, kSurfaceKeys, /*lenient=*/false, seen);
    const std::string p = join_path(path, e.key);
    if (e.key == "include") {
      s.include = read_selectors(r, e.value, p, config);
    } else if (e.key == "exclude") {
      s.exclude = read_selectors(r, e.value, p, config);
    } else {
      for (const Entry& t : r.entries(e.value, p)) {
        const std::string tp = join_path(p, t.key);
        if (!valid_tool_name(t.key))
          r.fail(t.key_mark, tp, "a tool's gateway name is 1-64 characters of [A-Za-z0-9_-]");
        if (!s.tools.emplace(t.key, read_tool(r, t.value, tp)).second)
          r.fail(t.key_mark, tp, fmt::format("duplicate tool '{}'", t.key));
      }
      check_names(r, e, p, s);
    }
  }
  if (s.include.empty() && s.tools.empty()) {
    r.fail(entry.key_mark, path,
           "selects no tool: give `include` rules or name tools under `tools`");
  }
  return s;
}

}  // namespace

const Surface* Surfaces::find(std::string_view name) const {
  for (const Surface& s : list) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

base::Status check_surface_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxSurfaceName ||
      !std::all_of(name.begin(), name.end(), is_name_char)) {
    return base::fail(
        fmt::format("a surface name is 1-{} characters of [A-Za-z0-9_-]", kMaxSurfaceName));
  }
  return {};
}

std::span<const std::string_view> surface_annotations() {
  return kAnnotations;
}
std::span<const std::string_view> surface_keys() {
  return kSurfaceKeys;
}
std::span<const std::string_view> surface_tool_keys() {
  return kToolKeys;
}
std::span<const std::string_view> surface_selector_keys() {
  return kSelectorKeys;
}

void read_surfaces(const NodeReader& r, const Node& node, const std::string& path, Config& config) {
  auto surfaces = std::make_shared<Surfaces>();
  NodeReader::Seen seen;
  const auto& entries = r.entries(node, path);
  if (entries.size() > kMaxSurfaces)
    r.fail(node.mark, path, fmt::format("at most {} surfaces", kMaxSurfaces));
  for (const Entry& e : entries) {
    const std::string p = join_path(path, e.key);
    if (base::Status named = check_surface_name(e.key); !named)
      r.fail(e.key_mark, p,
             fmt::format("'{}': {} (it is part of the URL /s/NAME/mcp)", e.key, named.error()));
    auto [it, fresh] = seen.emplace(e.key, e.key_mark);
    if (!fresh) {
      r.fail(e.key_mark, p,
             fmt::format("duplicate surface '{}' (first at line {})", e.key, it->second.line));
    }
    surfaces->list.push_back(read_surface(r, e, p, config));
  }
  config.surfaces = std::move(surfaces);
}

void check_key_surfaces(const NodeReader& r, const Entry* gateway, const Config& config) {
  // Found again in the tree (the key list kept no positions): gateway.auth.keys[i].surfaces[j].
  const auto child = [](const Node* n, std::string_view key) -> const Node* {
    if (!n || n->kind != Node::Kind::kMap) return nullptr;
    for (const Entry& e : n->entries) {
      if (e.key == key) return &e.value;
    }
    return nullptr;
  };
  if (!gateway) return;
  const Node* keys = child(child(&gateway->value, "auth"), "keys");
  if (!keys || keys->kind != Node::Kind::kList) return;
  for (std::size_t i = 0; i < keys->items.size(); ++i) {
    const Node* names = child(&keys->items[i], "surfaces");
    if (!names || names->kind != Node::Kind::kList) continue;
    for (std::size_t j = 0; j < names->items.size(); ++j) {
      const std::string& name = names->items[j].scalar;
      if (config.surfaces && config.surfaces->find(name)) continue;
      std::vector<std::string_view> known;
      if (config.surfaces) {
        for (const Surface& s : config.surfaces->list) known.push_back(s.name);
      }
      std::string msg = fmt::format("no surface '{}' is defined in `surfaces`", name);
      if (auto near = closest(name, known)) msg += fmt::format(" (did you mean '{}'?)", *near);
      r.fail(names->items[j].mark, fmt::format("{}.auth.keys[{}].surfaces[{}]", gateway->key, i, j),
             msg);
    }
  }
}

}  // namespace toolbridge::config
