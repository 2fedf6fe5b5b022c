#pragma once
// The aggregated view agents see: every server's tools and prompts under reversible names
// ("server__tool"), and resources routed by URI.
#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "repair/schema.h"

namespace toolbridge::upstream {
class Upstream;
struct Catalog;
}

namespace toolbridge::catalog {

// Valid tool names for LLM function calling: ^[a-zA-Z0-9_-]{1,64}$.
bool is_valid_tool_name(std::string_view name);

// Deterministic exposed names for (server, name) pairs. `server__tool` when that is valid and
// unique; otherwise characters outside [A-Za-z0-9_-] become '_' and, if the result is longer
// than 64 or collides, it is cut to 55 characters plus '_' and 8 hex digits of a hash of the
// original pair. With kUnprefixedWhenUnique a name used by one server only is exposed bare.
std::vector<std::string> expose_names(const std::vector<std::pair<std::string, std::string>>& pairs,
                                      config::ToolNaming naming, std::string_view separator);

struct Entry {
  std::string exposed;
  std::string server;
  std::string original;
  // Tools: the inputSchema, compiled once per distinct schema (null if the tool has none).
  std::shared_ptr<const repair::ToolSchema> schema;
  // Tools: the server's annotations readOnlyHint and idempotentHint (hints, not trust: the cache
  // uses them only where its config says so).
  bool read_only_hint = false;
  bool idempotent_hint = false;
  // Tools: execution.taskSupport as the server declares it ("optional", "required"), else empty.
  std::string task_support;
  // Tools: parameters the inputSchema marks with `x-mcp-header` (SEP-2243), as (parameter,
  // header name suffix): their values travel in `Mcp-Param-SUFFIX` request headers too.
  std::vector<std::pair<std::string, std::string>> header_params;
};

class Catalog {
 public:
  void rebuild(const std::vector<std::shared_ptr<upstream::Upstream>>& upstreams,
               config::ToolNaming naming, std::string_view separator);
  // The same from each server's name and lists (the servers that are not disabled).
  struct Source {
    std::string server;
    const upstream::Catalog* lists;
  };
  void rebuild(const std::vector<Source>& sources, config::ToolNaming naming,
               std::string_view separator);

  const Entry* tool(std::string_view exposed) const;
  const Entry* prompt(std::string_view exposed) const;
  // The server that serves a resource URI: exact match first, then URI templates.
  const std::string* resource_server(std::string_view uri) const;
  // Closest exposed tool names, for "did you mean" in errors.
  std::vector<std::string> suggest_tools(std::string_view name, std::size_t max = 3) const;

  // Pre-serialised list results; rebuilt only when a server's catalog changes.
  const std::string& tools_json() const { return tools_json_; }
  const std::string& prompts_json() const { return prompts_json_; }
  const std::string& resources_json() const { return resources_json_; }
  const std::string& templates_json() const { return templates_json_; }
  std::size_t tool_count() const { return tools_.size(); }
  // Moves (by one) at every rebuild that changed the tool list, names or schemas: what is derived
  // from the list is keyed on it and rebuilt once per version, never per request.
  std::uint64_t version() const { return version_; }
  // Every tool by exposed name: the names repair matches a mistyped one against.
  const std::map<std::string, Entry, std::less<>>& tool_entries() const { return tools_; }
  // "server__tool: why" for each tool whose inputSchema does not compile (logged at the build).
  const std::vector<std::string>& schema_errors() const { return schema_errors_; }

 private:
  // Compiled schemas by their JSON text.
  using SchemaCache = std::map<std::string, std::shared_ptr<const repair::ToolSchema>, std::less<>>;
  std::shared_ptr<const repair::ToolSchema> compiled_schema(const boost::json::object& def,
                                                            const std::string& exposed,
                                                            SchemaCache& previous);

  std::map<std::string, Entry, std::less<>> tools_;
  SchemaCache schemas_;
  std::map<std::string, Entry, std::less<>> prompts_;
  std::map<std::string, std::string, std::less<>> resources_;   // uri -> server
  std::vector<std::pair<std::string, std::string>> templates_;  // template -> server
  std::vector<std::string> schema_errors_;
  std::uint64_t version_ = 0;
  std::string tools_json_ = R"({"tools":[]})";
  std::string prompts_json_ = R"({"prompts":[]})";
  std::string resources_json_ = R"({"resources":[]})";
  std::string templates_json_ = R"({"resourceTemplates":[]})";
};

// Matches an RFC 6570 level-1 template ("file:///{path}") against a URI.
bool matches_template(std::string_view tmpl, std::string_view uri);

// The compiled schema of each tool of `catalog` by exposed name, for the repair stage (below the
// catalog in the layers). `catalog` must outlive what is returned.
repair::SchemaOf schemas_of(const Catalog& catalog);

}  // namespace toolbridge::catalog
