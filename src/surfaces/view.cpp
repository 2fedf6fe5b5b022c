#include "surfaces/view.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include <algorithm>
#include <map>

#include "cache/canonical.h"
#include "config/suggestion.h"
#include "policy/authorize.h"

namespace toolbridge::surfaces {

namespace bj = boost::json;

namespace {

std::string_view string_at(const bj::object& o, std::string_view key) {
  const bj::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->as_string()) : std::string_view();
}

// The catalog's tags on a tool: _meta["toolbridge/server"] and _meta["toolbridge/name"].
std::string_view origin_of(const bj::object& def, std::string_view key) {
  const bj::value* meta = def.if_contains("_meta");
  return meta && meta->is_object() ? string_at(meta->as_object(), key) : std::string_view();
}

std::string_view server_of(const bj::object& def) {
  return origin_of(def, "toolbridge/server");
}

bool selected(const config::Surface& s, const bj::object& def, std::string_view name) {
  if (s.tools.contains(name)) return true;  // named under `tools`: always in
  const auto hit = [&def](const config::SurfaceSelector& rule) { return matches(rule, def); };
  return std::any_of(s.include.begin(), s.include.end(), hit) &&
         std::none_of(s.exclude.begin(), s.exclude.end(), hit);
}

// The inputSchema without the hidden arguments: out of `properties` and `required`.
void hide_arguments(bj::object& def, const std::string& defaults) {
  bj::value* schema = def.if_contains("inputSchema");
  if (defaults.empty() || !schema || !schema->is_object()) return;
  const bj::object hidden = bj::parse(defaults).as_object();
  bj::object& s = schema->as_object();
  if (bj::value* props = s.if_contains("properties"); props && props->is_object()) {
    for (const auto& [key, value] : hidden) props->as_object().erase(key);
  }
  if (bj::value* req = s.if_contains("required"); req && req->is_array()) {
    bj::array kept;
    for (const bj::value& r : req->as_array()) {
      if (!r.is_string() || !hidden.contains(r.as_string())) kept.push_back(r);
    }
    req->as_array() = std::move(kept);
  }
}

// What the model sees of one tool: the part the fingerprint covers.
bj::object seen_part(const bj::object& def) {
  bj::object out;
  for (std::string_view key : {"name", "title", "description", "inputSchema"}) {
    if (const bj::value* v = def.if_contains(key)) out[key] = *v;
  }
  return out;
}

std::string fingerprint_of(const bj::array& seen) {
  const std::string text = bj::serialize(seen);
  // Canonical JSON: the same list in another key order or spelling has the same fingerprint.
  const std::string canonical = cache::canonical_json(text).value_or(text);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(canonical.data()), canonical.size(), digest);
  std::string hex;
  for (int i = 0; i < 8; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

}  // namespace

bool glob_match(std::string_view glob, std::string_view text) {
  // Iterative, with one backtrack point: linear in practice, never exponential.
  std::size_t g = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (g < glob.size() && (glob[g] == '?' || glob[g] == text[t])) {
      ++g;
      ++t;
    } else if (g < glob.size() && glob[g] == '*') {
      star = g++;
      mark = t;
    } else if (star != std::string_view::npos) {
      g = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (g < glob.size() && glob[g] == '*') ++g;
  return g == glob.size();
}

bool matches(const config::SurfaceSelector& rule, const bj::object& def) {
  const std::string_view name = string_at(def, "name");
  if (!rule.server.empty() && server_of(def) != rule.server) return false;
  if (!rule.name.empty() && name != rule.name) return false;
  if (!rule.glob.empty() && !glob_match(rule.glob, name)) return false;
  if (!rule.annotation.empty()) {
    const bj::value* ann = def.if_contains("annotations");
    const bj::value* hint =
        ann && ann->is_object() ? ann->as_object().if_contains(rule.annotation) : nullptr;
    if (!hint || !hint->is_bool() || !hint->as_bool()) return false;
  }
  return true;
}

std::shared_ptr<const View> View::build(const config::Surface& surface, const bj::array& tools) {
  auto view = std::make_shared<View>();
  view->name_ = surface.name;
  // Shown name -> definition; a tool renamed onto another's name takes the name (it was asked
  // for by name), the other is left out and reported.
  std::map<std::string, std::pair<bj::object, Tool>> chosen;
  for (const bj::value& v : tools) {
    if (!v.is_object()) continue;
    const bj::object& def = v.as_object();
    const std::string exposed(string_at(def, "name"));
    if (exposed.empty() || !selected(surface, def, exposed)) continue;
    Tool tool{exposed,
              exposed,
              std::string(server_of(def)),
              std::string(origin_of(def, "toolbridge/name")),
              {}};
    bj::object shown = def;
    if (auto it = surface.tools.find(exposed); it != surface.tools.end()) {
      const config::SurfaceTool& o = it->second;
      if (!o.name.empty()) tool.shown = o.name;
      if (o.description) shown["description"] = *o.description;
      if (o.title) shown["title"] = *o.title;
      tool.defaults = o.defaults;
      hide_arguments(shown, o.defaults);
    }
    shown["name"] = tool.shown;
    const bool by_rename = tool.shown != exposed;
    auto [at, fresh] = chosen.try_emplace(tool.shown, std::move(shown), tool);
    if (fresh) continue;
    // Two tools want one name: the renamed one keeps it.
    const std::string& loser = by_rename ? at->second.second.exposed : exposed;
    view->problems_.push_back(
        fmt::format("surface {}: tool '{}' is left out: a tool renamed to '{}' takes its name",
                    surface.name, loser, tool.shown));
    if (by_rename) {
      at->second = {def, tool};
      at->second.first["name"] = tool.shown;
      // Re-apply the overrides to the winner's definition.
      const config::SurfaceTool& o = surface.tools.at(exposed);
      if (o.description) at->second.first["description"] = *o.description;
      if (o.title) at->second.first["title"] = *o.title;
      hide_arguments(at->second.first, o.defaults);
    }
  }
  bj::array list, seen;
  for (auto& [shown, entry] : chosen) {
    seen.push_back(seen_part(entry.first));
    list.push_back(std::move(entry.first));
    view->tools_.push_back(std::move(entry.second));
  }
  view->fingerprint_ = fingerprint_of(seen);
  bj::object meta{{"toolbridge/surface",
                   bj::object{{"name", surface.name}, {"fingerprint", view->fingerprint_}}}};
  view->tools_json_ =
      bj::serialize(bj::object{{"tools", std::move(list)}, {"_meta", std::move(meta)}});
  return view;
}

const Tool* View::find(std::string_view shown) const {
  auto it = std::lower_bound(tools_.begin(), tools_.end(), shown,
                             [](const Tool& t, std::string_view n) { return t.shown < n; });
  return it != tools_.end() && it->shown == shown ? &*it : nullptr;
}

std::vector<std::string> View::suggest(std::string_view name, std::size_t max) const {
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const Tool& t : tools_) {
    std::size_t d = config::edit_distance(name, t.shown);
    if (name.size() >= 3 && t.shown.find(name) != std::string::npos)
      d = std::min<std::size_t>(d, 2);
    if (d <= std::max<std::size_t>(2, name.size() / 3)) scored.emplace_back(d, t.shown);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && i < max; ++i) out.push_back(scored[i].second);
  return out;
}

std::string allowed_tools_json(const View& view, const config::ApiKey* key) {
  if (!key || key->allow.empty()) return view.tools_json();
  // The allowlist names gateway names: a tool allowed by its gateway name answers as a server
  // the key allows.
  return policy::allowed_tools_json(view.tools_json(), *key, [&](std::string_view shown) {
    const Tool* t = view.find(shown);
    if (!t) return std::string();
    return policy::allows(key, t->server, "") ? t->server : t->exposed;
  });
}

std::optional<std::string> with_defaults(std::string_view arguments, const std::string& defaults) {
  boost::system::error_code ec;
  bj::value args = arguments.empty() ? bj::value(bj::object{}) : bj::parse(arguments, ec);
  if (ec || !args.is_object()) return std::nullopt;
  if (defaults.empty()) return std::string(arguments.empty() ? "{}" : arguments);
  const bj::value hidden = bj::parse(defaults);  // named: the loop must not outlive it
  for (const auto& [key, value] : hidden.as_object()) args.as_object()[key] = value;
  return bj::serialize(args);
}

}  // namespace toolbridge::surfaces
