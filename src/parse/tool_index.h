#pragma once
// What parsing needs from the catalog, derived once per catalog version (never per request):
// tools by (server, own name) for use_mcp_tool, tools by their own name for a name written
// without its server, and each server's repair settings. It is keyed on the catalog's version
// counter: a request checks it with one integer comparison and the index is rebuilt only when
// the tool list moved.
// Resolving a RawCall gives the call as the gateway runs it: the exposed name, the arguments as a
// JSON object (qwen3_coder's text values converted by the tool's schema types, a string holding
// JSON decoded, malformed JSON repaired) and every change made on the way.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/expected.h"
#include "call/call.h"
#include "catalog/catalog.h"
#include "config/config.h"
#include "parse/format.h"

namespace toolbridge::parse {

struct ParsedCall {
  std::string id;
  std::string name;              // the exposed name when resolved, else as written
  std::string written;           // as the model wrote it ("server tool" for use_mcp_tool)
  std::string arguments = "{}";  // a JSON object
  std::vector<call::CallRepair> repairs;
  bool resolved = false;
  std::string problem;  // not resolved: why (unknown tool with close names, ambiguous)
};

class ToolIndex {
 public:
  ToolIndex(const catalog::Catalog& catalog, const config::Config& config);
  // Still the index of `catalog` (its tool list has not changed since).
  bool current(const catalog::Catalog& catalog) const {
    return &catalog == &catalog_ && catalog.version() == version_;
  }

  // `raw` into `out` as the gateway would run it; a failure saying why when its arguments cannot
  // be made an object: such a call is unparsed.
  base::Status resolve(const RawCall& raw, ParsedCall& out) const;

 private:
  const catalog::Entry* resolve_name(const RawCall& raw, ParsedCall& out) const;
  base::Status read_arguments(const RawCall& raw, const catalog::Entry* entry,
                              ParsedCall& out) const;

  const catalog::Catalog& catalog_;
  std::uint64_t version_;  // the catalog's version() it was built from
  std::string separator_;
  // Exposed names (entries are looked up when used: they live in the catalog).
  std::map<std::pair<std::string, std::string>, std::string> by_server_tool_;
  std::unordered_map<std::string, std::vector<std::string>> by_own_name_;
  std::unordered_map<std::string, const config::Server*> servers_;
};

// The index of the catalog's current version, rebuilt only when the version changes.
class ToolIndexCache {
 public:
  const ToolIndex& get(const catalog::Catalog& catalog, const config::Config& config);
  std::uint64_t builds() const { return builds_; }

 private:
  std::shared_ptr<const ToolIndex> index_;
  std::uint64_t builds_ = 0;
};

// A qwen3_coder parameter's text as the JSON value its schema types say (string kept when the
// text does not read as the type, or no type is known).
std::string convert_parameter(std::string_view text, const std::vector<std::string>& types);

}  // namespace toolbridge::parse
