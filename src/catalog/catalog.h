#pragma once
// The aggregated view agents see: every server's tools and prompts under reversible names
// ("server__tool"), and resources routed by URI.
#include <boost/json.hpp>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace toolbridge::upstream {
class Upstream;
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
};

class Catalog {
 public:
  void rebuild(const std::vector<std::shared_ptr<upstream::Upstream>>& upstreams,
               config::ToolNaming naming, std::string_view separator);

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

 private:
  std::map<std::string, Entry, std::less<>> tools_;
  std::map<std::string, Entry, std::less<>> prompts_;
  std::map<std::string, std::string, std::less<>> resources_;   // uri -> server
  std::vector<std::pair<std::string, std::string>> templates_;  // template -> server
  std::string tools_json_ = R"({"tools":[]})";
  std::string prompts_json_ = R"({"prompts":[]})";
  std::string resources_json_ = R"({"resources":[]})";
  std::string templates_json_ = R"({"resourceTemplates":[]})";
};

// Matches an RFC 6570 level-1 template ("file:///{path}") against a URI.
bool matches_template(std::string_view tmpl, std::string_view uri);

}  // namespace toolbridge::catalog
