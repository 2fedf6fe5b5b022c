#include "parse/scan.h"

#include <boost/json.hpp>

#include "json/parse.h"
#include "repair/json_repair.h"

namespace toolbridge::parse {

namespace bj = boost::json;

bool cut_marker(std::string_view text, std::size_t pos, std::string_view marker) {
  const std::string_view rest = text.substr(pos);
  return rest.size() < marker.size() && marker.substr(0, rest.size()) == rest;
}

std::size_t skip_ws(std::string_view text, std::size_t pos) {
  while (pos < text.size() &&
         (text[pos] == ' ' || text[pos] == '\n' || text[pos] == '\t' || text[pos] == '\r')) {
    ++pos;
  }
  return pos;
}

std::size_t json_extent(std::string_view text, std::size_t pos) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = pos; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0 || --depth == 0) return i + 1;
    }
  }
  return npos;
}

namespace {

// `json` as a value into `v`, repaired (safe) when it is not strict JSON; a failure when it
// cannot be.
base::Status value_of(std::string_view json, std::vector<std::string>& fixes, bj::value& v) {
  boost::system::error_code ec;
  v = json::parse(json, ec);
  if (!ec) return {};
  const repair::JsonRepair fixed = repair::repair_json(json, config::RepairMode::kSafe);
  if (!fixed.ok()) return base::fail("not JSON (" + ec.message() + "): " + fixed.problem);
  v = json::parse(fixed.json, ec);
  if (ec) return base::fail("not JSON (" + ec.message() + ")");
  for (std::string_view f : fixed.fixes) fixes.emplace_back(f);
  return {};
}

}  // namespace

base::Status read_call_object(std::string_view json, RawCall& out) {
  bj::value v;
  if (base::Status parsed = value_of(json, out.fixes, v); !parsed) return parsed;
  if (!v.is_object()) return base::fail("the call is not a JSON object {\"name\", \"arguments\"}");
  const bj::object& o = v.as_object();
  const bj::value* name = o.if_contains("name");
  if (!name || !name->is_string() || name->as_string().empty())
    return base::fail("the call has no \"name\" string");
  out.name = std::string(name->as_string());
  const bj::value* args = o.if_contains("arguments");
  if (!args) args = o.if_contains("parameters");
  if (!args || args->is_null()) {
    out.arguments = "{}";
  } else if (args->is_object() || args->is_string()) {
    out.arguments = bj::serialize(*args);
  } else {
    return base::fail("the call's arguments are not an object");
  }
  return {};
}

bool looks_like_call(std::string_view json) {
  return json.find("\"name\"") != npos &&
         (json.find("\"arguments\"") != npos || json.find("\"parameters\"") != npos);
}

std::string trim_one_newline(std::string_view text) {
  if (text.starts_with("\r\n")) {
    text.remove_prefix(2);
  } else if (text.starts_with('\n')) {
    text.remove_prefix(1);
  }
  if (text.ends_with("\r\n")) {
    text.remove_suffix(2);
  } else if (text.ends_with('\n')) {
    text.remove_suffix(1);
  }
  return std::string(text);
}

std::string trim(std::string_view text) {
  const std::size_t b = skip_ws(text, 0);
  std::size_t e = text.size();
  while (e > b && (text[e - 1] == ' ' || text[e - 1] == '\n' || text[e - 1] == '\t' ||
                   text[e - 1] == '\r')) {
    --e;
  }
  return std::string(text.substr(b, e - b));
}

std::string render_tool_response_blocks(const std::vector<ToolResponse>& responses) {
  std::string out;
  for (const auto& r : responses) {
    if (!out.empty()) out += '\n';
    out += "<tool_response>\n" + r.text + "\n</tool_response>";
  }
  return out;
}

}  // namespace toolbridge::parse
