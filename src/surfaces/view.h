#pragma once
// A tool surface as the model sees it (docs/surfaces.md): a filtered, renamed, re-described view
// over the gateway's catalog, built once per catalog version and never changed after, so that
// whoever holds one (a list in flight, a reload swapping the set) holds a consistent view.
#include <boost/json.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/surfaces.h"

namespace toolbridge::surfaces {

// One tool of a view.
struct Tool {
  std::string shown;     // the name the model sees and calls
  std::string exposed;   // the gateway's name for it (the catalog's)
  std::string server;    // the server that serves it
  std::string original;  // the server's own name for it
  std::string defaults;  // hidden arguments as a JSON object's text; empty: none
};

class View {
 public:
  // The view of `surface` over `tools`, the catalog's tool definitions (its tools/list).
  static std::shared_ptr<const View> build(const config::Surface& surface,
                                           const boost::json::array& tools);

  const std::string& name() const { return name_; }
  // 16 hex digits of the SHA-256 of the tool list as the model sees it (names, titles,
  // descriptions, input schemas, in canonical JSON, ordered by name): stable across restarts,
  // changed by any change the model could see.
  const std::string& fingerprint() const { return fingerprint_; }
  // The tools/list result: {"tools":[...],"_meta":{"toolbridge/surface":{name,fingerprint}}}.
  const std::string& tools_json() const { return tools_json_; }
  const std::vector<Tool>& tools() const { return tools_; }
  const Tool* find(std::string_view shown) const;
  // The shown names closest to `name`, for "did you mean" (within the surface only).
  std::vector<std::string> suggest(std::string_view name, std::size_t max = 3) const;
  // What the build left out and why (a renamed tool hiding another of the same name).
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::string name_;
  std::string fingerprint_;
  std::string tools_json_;
  std::vector<Tool> tools_;  // by shown name
  std::vector<std::string> problems_;
};

// `view`'s tools/list result as API key `key` may call it (its allowlist names gateway names or
// servers); the whole list when `key` is null or allows everything.
std::string allowed_tools_json(const View& view, const config::ApiKey* key);

// Whether `def` (a tool definition from the catalog, its name the gateway's, its server in
// _meta["toolbridge/server"]) matches `rule`.
bool matches(const config::SurfaceSelector& rule, const boost::json::object& def);
// `*` (any run) and `?` (one character) over `text`.
bool glob_match(std::string_view glob, std::string_view text);

// `arguments` (a JSON object's text, or empty) with the hidden `defaults` set: the surface pins
// them, whatever the caller sent. nullopt if `arguments` is not an object.
std::optional<std::string> with_defaults(std::string_view arguments, const std::string& defaults);

}  // namespace toolbridge::surfaces
