// The repair keys of a server entry: repair, validate, param_aliases and tool_repair (the same
// three per tool). Kept apart from server_keys.cpp: they belong to the repair component.
#include <fmt/format.h>

#include <array>

#include "config/server_keys.h"

namespace toolbridge::config {
namespace {

constexpr std::array<std::string_view, 3> kRepairModes{"off", "safe", "aggressive"};
constexpr std::array<std::string_view, 3> kValidateModes{"off", "warn", "enforce"};
constexpr std::array<std::string_view, 3> kToolRepairKeys{"repair", "validate", "param_aliases"};
constexpr std::size_t kMaxParamName = 256;

RepairMode repair_mode(const NodeReader& r, const Node& n, const std::string& path) {
  const std::string_view m = r.one_of(n, path, kRepairModes);
  return m == "off"          ? RepairMode::kOff
         : m == "aggressive" ? RepairMode::kAggressive
                             : RepairMode::kSafe;
}

ValidateMode validate_mode(const NodeReader& r, const Node& n, const std::string& path) {
  const std::string_view m = r.one_of(n, path, kValidateModes);
  return m == "off"       ? ValidateMode::kOff
         : m == "enforce" ? ValidateMode::kEnforce
                          : ValidateMode::kWarn;
}

void check_param_name(const NodeReader& r, Mark mark, const std::string& path,
                      std::string_view name) {
  if (name.empty()) r.fail(mark, path, "a parameter name must not be empty");
  if (name.size() > kMaxParamName) {
    r.fail(mark, path, fmt::format("a parameter name is at most {} bytes", kMaxParamName));
  }
}

// {written: schema_name}: what a model writes -> the parameter the tool's schema has.
std::map<std::string, std::string> param_aliases(const NodeReader& r, const Node& n,
                                                 const std::string& path) {
  std::map<std::string, std::string> out;
  for (const Entry& a : r.entries(n, path)) {
    const std::string p = join_path(path, a.key);
    check_param_name(r, a.key_mark, p, a.key);
    const std::string& to = r.text(a.value, p);
    check_param_name(r, a.value.mark, p, to);
    if (to == a.key) r.fail(a.value.mark, p, "an alias must differ from the name it stands for");
    if (!out.emplace(a.key, to).second) {
      r.fail(a.key_mark, path, fmt::format("duplicate alias '{}'", a.key));
    }
  }
  return out;
}

void read_tool_repair(const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
  for (const Entry& tool : r.entries(e.value, p)) {
    const std::string tool_path = join_path(p, tool.key);
    if (tool.key.empty()) r.fail(tool.key_mark, p, "a tool name must not be empty");
    ToolRepairOverride o;
    NodeReader::Seen seen;
    for (const Entry& k : r.entries(tool.value, tool_path)) {
      r.check_key(k, tool_path, kToolRepairKeys, /*lenient=*/false, seen);
      const std::string kp = join_path(tool_path, k.key);
      if (k.key == "repair") {
        o.repair = repair_mode(r, k.value, kp);
      } else if (k.key == "validate") {
        o.validate = validate_mode(r, k.value, kp);
      } else {
        o.param_aliases = param_aliases(r, k.value, kp);
      }
    }
    d.server.tool_repair[tool.key] = std::move(o);
  }
}

struct KeyReader {
  std::string_view key;
  ServerKeyReader read;
};

constexpr KeyReader kRepairKeyReaders[] = {
    {"repair", [](const NodeReader& r, const Entry& e, const std::string& p,
                  ServerDraft& d) { d.server.repair.repair = repair_mode(r, e.value, p); }},
    {"validate", [](const NodeReader& r, const Entry& e, const std::string& p,
                    ServerDraft& d) { d.server.repair.validate = validate_mode(r, e.value, p); }},
    {"param_aliases",
     [](const NodeReader& r, const Entry& e, const std::string& p, ServerDraft& d) {
       d.server.repair.param_aliases = param_aliases(r, e.value, p);
     }},
    {"tool_repair", read_tool_repair},
};

}  // namespace

std::string_view to_string(RepairMode m) {
  switch (m) {
    case RepairMode::kOff:
      return "off";
    case RepairMode::kSafe:
      return "safe";
    case RepairMode::kAggressive:
      return "aggressive";
  }
  return "safe";
}

std::string_view to_string(ValidateMode m) {
  switch (m) {
    case ValidateMode::kOff:
      return "off";
    case ValidateMode::kWarn:
      return "warn";
    case ValidateMode::kEnforce:
      return "enforce";
  }
  return "warn";
}

ServerKeyReader repair_key_reader(std::string_view key) {
  for (const KeyReader& k : kRepairKeyReaders) {
    if (k.key == key) return k.read;
  }
  return nullptr;
}

}  // namespace toolbridge::config
