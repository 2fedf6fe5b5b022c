#include "catalog/catalog.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "config/suggestion.h"
#include "upstream/upstream.h"

namespace toolbridge::catalog {

namespace bj = boost::json;

namespace {
constexpr std::size_t kMaxName = 64;
constexpr std::size_t kCutTo = 55;

bool valid_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

std::uint32_t fnv1a(std::string_view s) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

std::string sanitize(std::string s) {
  for (char& c : s) {
    if (!valid_char(c)) c = '_';
  }
  return s;
}

std::string hashed(const std::string& sanitized, const std::string& server,
                   const std::string& name) {
  return sanitized.substr(0, kCutTo) + fmt::format("_{:08x}", fnv1a(server + "/" + name));
}

}  // namespace

bool is_valid_tool_name(std::string_view name) {
  return !name.empty() && name.size() <= kMaxName &&
         std::all_of(name.begin(), name.end(), valid_char);
}

std::vector<std::string> expose_names(const std::vector<std::pair<std::string, std::string>>& pairs,
                                      config::ToolNaming naming, std::string_view separator) {
  std::map<std::string, int> uses;  // bare name -> number of servers offering it
  for (const auto& [server, name] : pairs) ++uses[name];
  std::vector<std::string> out;
  out.reserve(pairs.size());
  for (const auto& [server, name] : pairs) {
    const bool bare = naming == config::ToolNaming::kUnprefixedWhenUnique && uses[name] == 1 &&
                      is_valid_tool_name(name);
    out.push_back(bare ? name : sanitize(server + std::string(separator) + name));
  }
  // Anything too long, or claimed by two different pairs, gets the hashed form, for every
  // member of the clash, so the result does not depend on server order. A hashed name can in
  // turn equal a name as written; passes repeat until every name is unique (the salt grows for
  // names already hashed, which only a 32-bit hash collision can need).
  const std::vector<std::string> chosen = out;
  std::vector<int> salt(out.size(), -1);
  for (int pass = 0; pass < 8; ++pass) {
    std::map<std::string, int> count;
    for (const auto& n : out) ++count[n];
    bool changed = false;
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out[i].size() <= kMaxName && count[out[i]] == 1) continue;
      ++salt[i];
      const std::string& base = chosen[i];
      const std::string name =
          salt[i] == 0 ? pairs[i].second : pairs[i].second + "#" + std::to_string(salt[i]);
      out[i] = hashed(base, pairs[i].first, name);
      changed = true;
    }
    if (!changed) break;
  }
  return out;
}

bool matches_template(std::string_view tmpl, std::string_view uri) {
  // Literal parts must match exactly; a variable takes any run of characters (a simple {var}
  // stops at '/' unless it ends the template; {+var} and {/var} may span segments). Variables
  // backtrack, so "{name}.json" matches "config.local.json".
  std::size_t t = 0, u = 0;
  while (t < tmpl.size() && tmpl[t] != '{') {
    if (u >= uri.size() || uri[u] != tmpl[t]) return false;
    ++t;
    ++u;
  }
  if (t == tmpl.size()) return u == uri.size();
  const std::size_t close = tmpl.find('}', t);
  if (close == std::string_view::npos) return false;
  const bool multi = close > t + 1 && (tmpl[t + 1] == '+' || tmpl[t + 1] == '/');
  const std::string_view rest = tmpl.substr(close + 1);
  for (std::size_t end = u; end <= uri.size(); ++end) {
    if (end > u && !multi && !rest.empty() && uri[end - 1] == '/') break;
    if (matches_template(rest, uri.substr(end))) return true;
  }
  return false;
}

namespace {
// SEP-2243: the parameters of a tool's inputSchema marked with `x-mcp-header` (a header name
// suffix of token characters; a malformed mark is ignored, the tool still listed).
std::vector<std::pair<std::string, std::string>> header_params_of(const bj::object& def) {
  std::vector<std::pair<std::string, std::string>> out;
  const bj::value* schema = def.if_contains("inputSchema");
  const bj::value* props =
      schema && schema->is_object() ? schema->as_object().if_contains("properties") : nullptr;
  if (!props || !props->is_object()) return out;
  for (const auto& [name, prop] : props->as_object()) {
    const bj::value* mark = prop.is_object() ? prop.as_object().if_contains("x-mcp-header") : nullptr;
    if (!mark || !mark->is_string() || mark->as_string().empty() || mark->as_string().size() > 64)
      continue;
    const std::string_view suffix = mark->as_string();
    const bool token = std::all_of(suffix.begin(), suffix.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
    });
    if (token && out.size() < 16) out.emplace_back(std::string(name), std::string(suffix));
  }
  return out;
}

// Which server a listed tool or prompt comes from, under which name, whatever the naming mode:
// `toolbridge stdio --server NAME` and other clients can select one server's entries by it.
void tag_origin(bj::object& def, const std::string& server, const std::string& original) {
  bj::value& meta = def["_meta"];
  if (!meta.is_object()) meta = bj::object{};
  meta.as_object()["toolbridge/server"] = server;
  meta.as_object()["toolbridge/name"] = original;
}
}  // namespace

void Catalog::rebuild(const std::vector<std::shared_ptr<upstream::Upstream>>& upstreams,
                      config::ToolNaming naming, std::string_view separator) {
  std::vector<Source> sources;
  std::map<std::string, const std::vector<std::string>*, std::less<>> task_tools;
  for (const auto& up : upstreams) {
    const upstream::Catalog* snapshot = up->catalog();
    if (!snapshot || up->state() == upstream::Upstream::State::kDisabled) continue;
    sources.push_back({up->name(), snapshot});
    if (!up->config().task_tools.empty()) task_tools[up->name()] = &up->config().task_tools;
  }
  if (task_tools.empty()) return rebuild(sources, naming, separator);
  const std::string before = tools_json_;
  const std::uint64_t version = version_;
  rebuild(sources, naming, separator);
  // The tools the gateway runs as tasks for their servers (task_tools) show it in the list as the
  // tasks extension says, execution.taskSupport "optional", in both eras (docs/tasks.md).
  bj::value list = bj::parse(tools_json_);
  for (bj::value& def : list.as_object()["tools"].as_array()) {
    auto it = tools_.find(std::string_view(def.at("name").as_string()));
    if (it == tools_.end() || !it->second.task_support.empty()) continue;
    auto names = task_tools.find(it->second.server);
    if (names == task_tools.end()) continue;
    const std::string& original = it->second.original;
    if (std::none_of(names->second->begin(), names->second->end(),
                     [&](const std::string& t) { return t == "*" || t == original; }))
      continue;
    it->second.task_support = "optional";
    bj::value& execution = def.as_object()["execution"];
    if (!execution.is_object()) execution = bj::object{};
    execution.as_object()["taskSupport"] = "optional";
  }
  tools_json_ = bj::serialize(list);
  version_ = version + (tools_json_ != before ? 1 : 0);
}

void Catalog::rebuild(const std::vector<Source>& sources, config::ToolNaming naming,
                      std::string_view separator) {
  tools_.clear();
  prompts_.clear();
  resources_.clear();
  templates_.clear();
  std::vector<std::pair<std::string, std::string>> tool_pairs, prompt_pairs;
  std::vector<const bj::object*> tool_defs, prompt_defs;
  bj::array resources, templates;
  for (const auto& [server, snapshot] : sources) {
    const auto& cat = *snapshot;
    for (const auto& t : cat.tools) {
      if (!t.is_object() || !t.as_object().contains("name") || !t.at("name").is_string()) continue;
      tool_pairs.emplace_back(server, std::string(t.at("name").as_string()));
      tool_defs.push_back(&t.as_object());
    }
    for (const auto& p : cat.prompts) {
      if (!p.is_object() || !p.as_object().contains("name") || !p.at("name").is_string()) continue;
      prompt_pairs.emplace_back(server, std::string(p.at("name").as_string()));
      prompt_defs.push_back(&p.as_object());
    }
    for (const auto& r : cat.resources) {
      if (!r.is_object() || !r.as_object().contains("uri") || !r.at("uri").is_string()) continue;
      // The first server to list a URI owns it; later duplicates are hidden, not merged.
      if (resources_.emplace(std::string(r.at("uri").as_string()), server).second) {
        resources.push_back(r);
      }
    }
    for (const auto& r : cat.resource_templates) {
      if (!r.is_object() || !r.as_object().contains("uriTemplate") ||
          !r.at("uriTemplate").is_string())
        continue;
      templates_.emplace_back(std::string(r.at("uriTemplate").as_string()), server);
      templates.push_back(r);
    }
  }
  const auto tool_names = expose_names(tool_pairs, naming, separator);
  SchemaCache schemas = std::move(schemas_);
  schema_errors_.clear();
  bj::array tools;
  for (std::size_t i = 0; i < tool_pairs.size(); ++i) {
    tools_[tool_names[i]] = Entry{tool_names[i], tool_pairs[i].first, tool_pairs[i].second,
                                  compiled_schema(*tool_defs[i], tool_names[i], schemas)};
    if (const auto* ann = tool_defs[i]->if_contains("annotations"); ann && ann->is_object()) {
      const auto hint = [&](std::string_view name) {
        const auto* h = ann->as_object().if_contains(name);
        return h && h->is_bool() && h->as_bool();
      };
      tools_[tool_names[i]].read_only_hint = hint("readOnlyHint");
      tools_[tool_names[i]].idempotent_hint = hint("idempotentHint");
    }
    if (const auto* exec = tool_defs[i]->if_contains("execution"); exec && exec->is_object()) {
      const auto* support = exec->as_object().if_contains("taskSupport");
      if (support && support->is_string() &&
          (support->as_string() == "optional" || support->as_string() == "required"))
        tools_[tool_names[i]].task_support = std::string(support->as_string());
    }
    tools_[tool_names[i]].header_params = header_params_of(*tool_defs[i]);
    bj::object def = *tool_defs[i];
    def["name"] = tool_names[i];
    tag_origin(def, tool_pairs[i].first, tool_pairs[i].second);
    tools.push_back(std::move(def));
  }
  const auto prompt_names = expose_names(prompt_pairs, naming, separator);
  bj::array prompts;
  for (std::size_t i = 0; i < prompt_pairs.size(); ++i) {
    prompts_[prompt_names[i]] =
        Entry{prompt_names[i], prompt_pairs[i].first, prompt_pairs[i].second};
    bj::object def = *prompt_defs[i];
    def["name"] = prompt_names[i];
    tag_origin(def, prompt_pairs[i].first, prompt_pairs[i].second);
    prompts.push_back(std::move(def));
  }
  std::string tools_json = bj::serialize(bj::object{{"tools", std::move(tools)}});
  if (tools_json != tools_json_) ++version_;
  tools_json_ = std::move(tools_json);
  prompts_json_ = bj::serialize(bj::object{{"prompts", std::move(prompts)}});
  resources_json_ = bj::serialize(bj::object{{"resources", std::move(resources)}});
  templates_json_ = bj::serialize(bj::object{{"resourceTemplates", std::move(templates)}});
}

std::shared_ptr<const repair::ToolSchema> Catalog::compiled_schema(const bj::object& def,
                                                                   const std::string& exposed,
                                                                   SchemaCache& previous) {
  const bj::value* input = def.if_contains("inputSchema");
  if (!input) return nullptr;
  // A list that changed recompiles only the schemas that changed.
  std::string text = bj::serialize(*input);
  // Tools that share a schema (this build) or kept theirs (the last build) share one compilation.
  auto it = schemas_.find(text);
  const bool known = it != schemas_.end() || (it = previous.find(text)) != previous.end();
  std::shared_ptr<const repair::ToolSchema> schema =
      known ? it->second : repair::ToolSchema::compile(*input);
  if (!schema->compiled()) {
    schema_errors_.push_back(exposed + ": " + schema->error());
    if (!known) {
      spdlog::warn("tool {}: its inputSchema does not compile, calls are not validated: {}",
                   exposed, schema->error());
    }
  }
  schemas_.emplace(std::move(text), schema);
  return schema;
}

const Entry* Catalog::tool(std::string_view exposed) const {
  auto it = tools_.find(exposed);
  return it == tools_.end() ? nullptr : &it->second;
}

const Entry* Catalog::prompt(std::string_view exposed) const {
  auto it = prompts_.find(exposed);
  return it == prompts_.end() ? nullptr : &it->second;
}

const std::string* Catalog::resource_server(std::string_view uri) const {
  if (auto it = resources_.find(uri); it != resources_.end()) return &it->second;
  for (const auto& [tmpl, server] : templates_) {
    if (matches_template(tmpl, uri)) return &server;
  }
  return nullptr;
}

std::vector<std::string> Catalog::suggest_tools(std::string_view name, std::size_t max) const {
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& [exposed, entry] : tools_) {
    std::size_t d =
        std::min(config::edit_distance(name, exposed), config::edit_distance(name, entry.original));
    // A bare tool name ("python") inside the exposed one ("sandbox__run_python") is a near miss.
    if (exposed.find(name) != std::string::npos && name.size() >= 3)
      d = std::min<std::size_t>(d, 2);
    if (d <= std::max<std::size_t>(2, name.size() / 3)) scored.emplace_back(d, exposed);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && i < max; ++i) out.push_back(scored[i].second);
  return out;
}

repair::SchemaOf schemas_of(const Catalog& catalog) {
  return [&catalog](std::string_view label) -> std::optional<const repair::ToolSchema*> {
    const Entry* entry = catalog.tool(label);
    if (!entry) return std::nullopt;
    return entry->schema.get();
  };
}

}  // namespace toolbridge::catalog
