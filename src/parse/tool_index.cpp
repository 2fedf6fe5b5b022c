#include "parse/tool_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cerrno>
#include <cstdlib>

#include "catalog/tool_name.h"
#include "json/parse.h"
#include "repair/json_repair.h"

namespace toolbridge::parse {

namespace bj = boost::json;
using call::CallRepair;

namespace {

bool has(const std::vector<std::string>& types, std::string_view t) {
  return std::find(types.begin(), types.end(), t) != types.end();
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

// `text` as a JSON value into `v` (repaired when it is not strict JSON); a failure when it cannot
// be.
base::Status read_json(std::string_view text, std::vector<CallRepair>& repairs, bj::value& v) {
  boost::system::error_code ec;
  v = json::parse(text, ec);
  if (!ec) return {};
  const repair::JsonRepair fixed = repair::repair_json(text, config::RepairMode::kSafe);
  if (fixed.ok()) v = json::parse(fixed.json, ec);
  if (!fixed.ok() || ec) {
    return base::fail("the arguments are not JSON" +
                      (fixed.problem.empty() ? "" : ": " + fixed.problem));
  }
  for (std::string_view f : fixed.fixes)
    repairs.push_back({"json_repaired", "", std::string(f), ""});
  return {};
}

}  // namespace

std::string convert_parameter(std::string_view text, const std::vector<std::string>& types) {
  const std::string quoted = json::quote(text);
  if (types.empty() || has(types, "string")) return quoted;
  if (lower(text) == "null") return "null";
  const std::string t(text);
  if (has(types, "integer") && !t.empty()) {
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(t.c_str(), &end, 10);
    if (errno == 0 && end == t.c_str() + t.size()) return std::to_string(n);
  }
  if (has(types, "number") && !t.empty()) {
    boost::system::error_code ec;
    const bj::value v = json::parse(t, ec);
    if (!ec && v.is_number()) return bj::serialize(v);
  }
  if (has(types, "boolean")) {
    const std::string l = lower(text);
    if (l == "true" || l == "false") return l;
  }
  if (has(types, "object") || has(types, "array")) {
    boost::system::error_code ec;
    const bj::value v = json::parse(t, ec);
    if (!ec && ((v.is_object() && has(types, "object")) || (v.is_array() && has(types, "array")))) {
      return bj::serialize(v);
    }
  }
  return quoted;
}

ToolIndex::ToolIndex(const catalog::Catalog& catalog, const config::Config& config)
    : catalog_(catalog), version_(catalog.version()), separator_(config.gateway.separator) {
  for (const auto& [exposed, entry] : catalog.tool_entries()) {
    by_server_tool_.emplace(std::pair{entry.server, entry.original}, exposed);
    by_own_name_[entry.original].push_back(exposed);
  }
  for (const auto& s : config.servers) servers_.emplace(s.name, &s);
}

const catalog::Entry* ToolIndex::resolve_name(const RawCall& raw, ParsedCall& out) const {
  out.written = raw.server.empty() ? raw.name : raw.server + " " + raw.name;
  std::string wanted = raw.server.empty() ? raw.name : raw.server + separator_ + raw.name;
  out.name = wanted;
  const catalog::Entry* entry = nullptr;
  if (!raw.server.empty()) {
    auto it = by_server_tool_.find({raw.server, raw.name});
    if (it != by_server_tool_.end()) entry = catalog_.tool(it->second);
  }
  if (!entry) entry = catalog_.tool(wanted);
  // A tool's own name that one server has: the server written (none, the tool's name again, a
  // wrong one: MiroFlow's <server_name>web_search</server_name>) does not matter.
  if (!entry) {
    auto it = by_own_name_.find(raw.name);
    if (it != by_own_name_.end() && it->second.size() == 1) entry = catalog_.tool(it->second[0]);
  }
  if (!entry) {
    const auto mode_of = [this](const catalog::Entry& e) {
      auto it = servers_.find(e.server);
      return it == servers_.end() ? config::RepairMode::kOff
                                  : it->second->repair_for(e.original).repair;
    };
    const auto match =
        catalog::match_tool_name(catalog_, wanted, mode_of, config::RepairMode::kAggressive);
    if (match.kind == repair::MatchKind::kAmbiguous) {
      std::string names;
      for (const auto* e : match.entries) names += (names.empty() ? "'" : ", '") + e->exposed + "'";
      out.problem = fmt::format("'{}' could be any of {}: name one", wanted, names);
      return nullptr;
    }
    if (!match.entries.empty()) entry = match.entries.front();
  }
  if (!entry) {
    out.problem = "Unknown tool: '" + wanted + "'";
    const auto close = catalog_.suggest_tools(wanted);
    for (std::size_t i = 0; i < close.size(); ++i) {
      out.problem += (i ? ", '" : "; did you mean '") + close[i] + "'";
    }
    return nullptr;
  }
  out.name = entry->exposed;
  out.resolved = true;
  if (entry->exposed != wanted) out.repairs.push_back({"tool_name", "", wanted, entry->exposed});
  return entry;
}

base::Status ToolIndex::read_arguments(const RawCall& raw, const catalog::Entry* entry,
                                       ParsedCall& out) const {
  for (const auto& f : raw.fixes) out.repairs.push_back({"json_repaired", "", f, ""});
  if (!raw.parameters.empty() || raw.arguments.empty()) {
    std::string object = "{";
    for (const auto& [name, text] : raw.parameters) {
      const repair::Parameter* p =
          entry && entry->schema ? entry->schema->parameter(name) : nullptr;
      static const std::vector<std::string> kNone;
      if (object.size() > 1) object += ',';
      object += json::quote(name) + ":" + convert_parameter(text, p ? p->types : kNone);
    }
    out.arguments = object + "}";
    return {};
  }
  bj::value v;
  if (base::Status read = read_json(raw.arguments, out.repairs, v); !read) return read;
  if (v.is_string()) {
    const std::string inner(v.as_string());
    if (base::Status read = read_json(inner, out.repairs, v); !read) return read;
    out.repairs.push_back({"arguments_decoded", "", "a JSON string", "an object"});
  }
  if (v.is_null()) v = bj::object{};
  if (!v.is_object()) return base::fail("the arguments are not a JSON object");
  if (raw.drop_nulls) {
    auto& o = v.as_object();
    for (auto it = o.begin(); it != o.end();) {
      if (it->value().is_null()) {
        out.repairs.push_back({"null_dropped", "/" + std::string(it->key()), "null", ""});
        it = o.erase(it);
      } else {
        ++it;
      }
    }
  }
  out.arguments = bj::serialize(v);
  return {};
}

base::Status ToolIndex::resolve(const RawCall& raw, ParsedCall& out) const {
  const catalog::Entry* entry = resolve_name(raw, out);
  return read_arguments(raw, entry, out);
}

const ToolIndex& ToolIndexCache::get(const catalog::Catalog& catalog,
                                     const config::Config& config) {
  if (!index_ || !index_->current(catalog)) {
    index_ = std::make_shared<const ToolIndex>(catalog, config);
    ++builds_;
  }
  return *index_;
}

}  // namespace toolbridge::parse
