#include "upstream/stateless.h"

#include <algorithm>
#include <boost/beast/core/detail/base64.hpp>
#include <boost/json.hpp>

#include "json/parse.h"
#include "mcp/revision.h"

namespace toolbridge::upstream {

namespace bj = boost::json;
namespace b64 = boost::beast::detail::base64;

namespace {

// What the gateway declares upstream: everything it can route back to an agent.
bj::object envelope() {
  return bj::object{
      {mcp::kVersionMeta, mcp::kStatelessVersion},
      {mcp::kCapabilitiesMeta, bj::object{{"roots", bj::object{{"listChanged", true}}},
                                          {"sampling", bj::object{}},
                                          {"elicitation", bj::object{}}}},
      {mcp::kClientInfoMeta, bj::object{{"name", "toolbridge"}, {"version", "0.1.0"}}}};
}

// Whether `object[key]` is an array naming a version the gateway serves statelessly.
bool lists_stateless(const bj::value& object, std::string_view key) {
  const bj::value* versions = object.is_object() ? object.as_object().if_contains(key) : nullptr;
  if (!versions || !versions->is_array()) return false;
  for (const auto& v : versions->as_array()) {
    if (v.is_string() && mcp::is_stateless_version(v.as_string())) return true;
  }
  return false;
}

}  // namespace

std::string discover_params() {
  return bj::serialize(bj::object{{"_meta", envelope()}});
}

bool offers_stateless(const bj::value& result) {
  return lists_stateless(result, "supportedVersions");
}

bool supports_after_rejection(const bj::value& error) {
  const bj::object* e = error.if_object();
  if (!e) return false;
  const bj::value* code = e->if_contains("code");
  if (!code || !code->is_int64() || code->as_int64() != mcp::kUnsupportedProtocolVersion) {
    return false;
  }
  const bj::value* data = e->if_contains("data");
  return data && lists_stateless(*data, "supported");
}

StatelessMessage to_stateless(std::string_view message) {
  StatelessMessage out{std::string(message), {}, {}};
  boost::system::error_code ec;
  bj::value v = json::parse(message, ec);
  if (ec || !v.is_object()) return out;
  bj::object& m = v.as_object();
  const bj::value* method = m.if_contains("method");
  if (!method || !method->is_string()) return out;  // a response to the server
  out.method = std::string(method->as_string());
  if (!m.contains("id")) return out;  // notifications carry no envelope
  bj::value& params = m["params"];
  if (!params.is_object()) params = bj::object();
  // A server's own task (docs/tasks.md): the task-augmented tools/call of 2025-11-25 (params.task,
  // what ServerTasks sends) is, in this revision, a tools/call whose envelope declares the tasks
  // extension (SEP-2663: the server decides); tasks/get, tasks/update and tasks/cancel need it
  // declared too, and name their task in Mcp-Name. (Erased before `meta` below is taken: an
  // erase moves the object's members.)
  const bool task_call = out.method == "tools/call" && params.as_object().erase("task") > 0;
  const bool task_method =
      out.method == "tasks/get" || out.method == "tasks/update" || out.method == "tasks/cancel";
  bj::value& meta = params.as_object()["_meta"];
  if (!meta.is_object()) meta = bj::object();
  for (auto& [k, val] : envelope()) meta.as_object()[k] = val;
  if (task_call || task_method) {
    bj::value& caps = meta.as_object()[mcp::kCapabilitiesMeta];
    if (caps.is_object()) {
      caps.as_object()["extensions"] = bj::object{{"io.modelcontextprotocol/tasks", bj::object{}}};
    }
  }
  const std::string_view key = out.method == "resources/read" ? "uri"
                               : (out.method == "tools/call" || out.method == "prompts/get")
                                   ? "name"
                               : task_method ? "taskId"
                                             : "";
  if (!key.empty()) {
    if (const bj::value* named = params.as_object().if_contains(key); named && named->is_string())
      out.name = std::string(named->as_string());
  }
  out.body = bj::serialize(v);
  return out;
}

void add_stateless_headers(std::vector<std::pair<std::string, std::string>>& headers,
                           const std::string& method, const std::string& name,
                           const std::string& version) {
  headers.emplace_back("MCP-Protocol-Version",
                       version.empty() ? std::string(mcp::kStatelessVersion) : version);
  if (!method.empty()) headers.emplace_back("Mcp-Method", method);
  if (name.empty()) return;
  const bool plain =
      std::all_of(name.begin(), name.end(), [](char c) { return c >= 0x20 && c <= 0x7e; }) &&
      name.front() != ' ' && name.back() != ' ';
  if (plain) {
    headers.emplace_back("Mcp-Name", name);
    return;
  }
  std::string encoded(b64::encoded_size(name.size()), '\0');
  encoded.resize(b64::encode(encoded.data(), name.data(), name.size()));
  headers.emplace_back("Mcp-Name", "=?base64?" + encoded + "?=");
}

void learn_header_marks(std::string_view message, HeaderMarks& marks) {
  if (message.find("x-mcp-header") == std::string_view::npos) return;
  boost::system::error_code ec;
  const bj::value v = json::parse(message, ec);
  const bj::value* result = !ec && v.is_object() ? v.as_object().if_contains("result") : nullptr;
  const bj::value* tools =
      result && result->is_object() ? result->as_object().if_contains("tools") : nullptr;
  if (!tools || !tools->is_array()) return;
  for (const auto& tool : tools->as_array()) {
    const bj::object* t = tool.if_object();
    const bj::value* name = t ? t->if_contains("name") : nullptr;
    const bj::value* schema = t ? t->if_contains("inputSchema") : nullptr;
    const bj::value* props =
        schema && schema->is_object() ? schema->as_object().if_contains("properties") : nullptr;
    if (!name || !name->is_string() || !props || !props->is_object()) continue;
    std::vector<std::pair<std::string, std::string>> found;
    for (const auto& [param, prop] : props->as_object()) {
      const bj::value* mark =
          prop.is_object() ? prop.as_object().if_contains("x-mcp-header") : nullptr;
      if (!mark || !mark->is_string() || mark->as_string().empty() || mark->as_string().size() > 64)
        continue;
      const std::string_view suffix = mark->as_string();
      const bool token = std::all_of(suffix.begin(), suffix.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_';
      });
      if (token && found.size() < 16) found.emplace_back(std::string(param), std::string(suffix));
    }
    if (found.empty()) continue;
    if (marks.size() >= 4096 && !marks.contains(name->as_string())) continue;
    marks[std::string(name->as_string())] = std::move(found);
  }
}

std::optional<std::string> param_header_value(const bj::value& v) {
  std::string text;
  if (v.is_string()) {
    text = std::string(v.as_string());
  } else if (v.is_number() || v.is_bool()) {
    text = bj::serialize(v);
  } else {
    return std::nullopt;
  }
  const bool plain =
      std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c <= 0x7e; }) &&
      (text.empty() || (text.front() != ' ' && text.back() != ' '));
  if (plain) return text;
  std::string encoded(b64::encoded_size(text.size()), '\0');
  encoded.resize(b64::encode(encoded.data(), text.data(), text.size()));
  return "=?base64?" + encoded + "?=";
}

void add_param_headers(std::vector<std::pair<std::string, std::string>>& headers,
                       std::string_view body, std::string_view tool, const HeaderMarks& marks) {
  const auto it = marks.find(tool);
  if (it == marks.end()) return;
  boost::system::error_code ec;
  const bj::value v = json::parse(body, ec);
  const bj::value* params = !ec && v.is_object() ? v.as_object().if_contains("params") : nullptr;
  const bj::value* args =
      params && params->is_object() ? params->as_object().if_contains("arguments") : nullptr;
  if (!args || !args->is_object()) return;
  for (const auto& [param, suffix] : it->second) {
    const bj::value* arg = args->as_object().if_contains(param);
    if (!arg) continue;
    if (auto value = param_header_value(*arg)) headers.emplace_back("Mcp-Param-" + suffix, *value);
  }
}

}  // namespace toolbridge::upstream
