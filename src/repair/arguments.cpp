#include "repair/arguments.h"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>

#include "json/envelope.h"
#include "json/parse.h"
#include "repair/json_repair.h"
#include "repair/names.h"

namespace toolbridge::repair {

namespace bj = boost::json;
using config::RepairMode;

std::string abbreviate(std::string_view text, std::size_t max) {
  if (text.size() <= max) return std::string(text);
  std::size_t cut = max;
  // Never cut inside a UTF-8 sequence.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "…";
}

namespace {

std::string pointer(std::string_view name) {
  std::string out = "/";
  append_pointer_token(out, name);
  return out;
}

}  // namespace

bool may_need_repair(std::string_view raw, const ToolSchema& schema,
                     const config::RepairSettings& settings) {
  const auto members = json::object_members(raw);
  return !members || may_need_repair(raw, *members, schema, settings);
}

bool may_need_repair(std::string_view raw, const std::vector<json::Member>& members,
                     const ToolSchema& schema, const config::RepairSettings& settings) {
  if (settings.repair == RepairMode::kOff) return false;
  // Objects inside the arguments are not scanned: their mistakes need the parse.
  if (schema.nested() && !members.empty()) return true;
  for (const auto& m : members) {
    const Parameter* p = schema.parameter(m.name);
    if (!p) {
      // An unknown name: a typo of a parameter, an alias, or a parameter the schema forbids.
      if (!schema.parameters().empty()) return true;
      continue;
    }
    const std::string_view value = m.value.in(raw);
    if (!p->accepts(raw_json_type(value))) return true;
    if (!p->quoted_enum.empty() && value.front() == '"' &&
        std::find(p->quoted_enum.begin(), p->quoted_enum.end(), value) == p->quoted_enum.end())
      return true;
  }
  // A required parameter missing: only a default can fill it.
  for (const auto& p : schema.parameters()) {
    if (!p.required || !p.default_value) continue;
    if (std::none_of(members.begin(), members.end(),
                     [&](const json::Member& m) { return m.name == p.name; }))
      return true;
  }
  return false;
}

namespace {

class ArgumentRepairer {
 public:
  ArgumentRepairer(const ToolSchema* schema, const config::RepairSettings& settings,
                   ArgumentRepair& out)
      : schema_(schema), settings_(settings), out_(out) {}

  // The arguments as an object, or nullopt with out_.problem set.
  std::optional<bj::object> to_object(std::string_view raw) {
    if (raw.empty()) return bj::object{};
    boost::system::error_code ec;
    bj::value v = json::parse(raw, ec);
    if (ec) {
      out_.problem = "arguments are not JSON";
      return std::nullopt;
    }
    if (v.is_object()) return std::move(v.get_object());
    if (v.is_null() && settings_.repair != RepairMode::kOff) {
      change("null_arguments", "", "null", "{}");
      return bj::object{};
    }
    if (!v.is_string()) {
      out_.problem = "arguments must be an object, not " + std::string(json_type(v));
      return std::nullopt;
    }
    if (settings_.repair == RepairMode::kOff) {
      out_.problem = "arguments must be an object, not a string (repair is off)";
      return std::nullopt;
    }
    const std::string_view text = v.get_string();
    JsonRepair fixed = repair_json(text, settings_.repair);
    if (!fixed.ok()) {
      out_.problem =
          "arguments must be an object; the string given is not JSON that can be "
          "repaired without guessing: " +
          fixed.problem;
      return std::nullopt;
    }
    bj::value inner = json::parse(fixed.json, ec);
    if (ec || !inner.is_object()) {
      out_.problem = "arguments must be an object; the string given holds " +
                     std::string(ec ? "no JSON" : json_type(inner));
      return std::nullopt;
    }
    change("arguments_string", "", abbreviate(raw), "an object");
    for (std::string_view f : fixed.fixes) change(f, "", "", "");
    return std::move(inner.get_object());
  }

  void repair(bj::object& args) {
    if (schema_) repair(args, schema_->shape(), "", 0);
  }

 private:
  void change(std::string_view kind, std::string path, std::string from, std::string to) {
    out_.changes.push_back({kind, std::move(path), std::move(from), std::move(to)});
  }

  // One object against its shape, then the objects inside it (`at`: its JSON pointer).
  void repair(bj::object& args, const Shape& shape, const std::string& at, std::size_t depth) {
    rename_parameters(args, shape, at);
    for (const auto& p : shape.parameters) {
      bj::value* v = args.if_contains(p.name);
      if (!v) continue;
      fix_value(args, p, *v, at);
      // fix_value may have dropped it.
      v = args.if_contains(p.name);
      if (!v || depth >= json::kMaxDepth) continue;
      const std::string here = at + pointer(p.name);
      if (p.fields && v->is_object()) repair(v->get_object(), *p.fields, here, depth + 1);
      if (p.item_fields && v->is_array()) {
        auto& items = v->get_array();
        for (std::size_t i = 0; i < items.size(); ++i) {
          if (items[i].is_object()) {
            repair(items[i].get_object(), *p.item_fields, here + "/" + std::to_string(i),
                   depth + 1);
          }
        }
      }
    }
    fill_defaults(args, shape, at);
  }

  // The parameter an unknown name stands for, or nullptr.
  const Parameter* target_of(std::string_view name, const Shape& shape,
                             std::string_view& kind) const {
    if (settings_.repair == RepairMode::kOff) return nullptr;
    // Matching costs a few edit distances per parameter: a call with thousands of unknown names
    // gets the first ones matched, not a second of CPU.
    if (++match_attempts_ > kMaxMatchedParams) return nullptr;
    if (auto it = settings_.param_aliases.find(std::string(name));
        it != settings_.param_aliases.end()) {
      kind = "param_alias";
      return shape.parameter(it->second);
    }
    std::vector<std::vector<std::string>> spellings;
    for (const auto& p : shape.parameters) spellings.push_back({p.name});
    const NameMatch m = match_name(name, spellings, settings_.repair);
    if (m.kind != MatchKind::kNormalised && m.kind != MatchKind::kFuzzy) return nullptr;
    kind = "param_name";
    return &shape.parameters[m.candidates.front()];
  }

  void rename_parameters(bj::object& args, const Shape& shape, const std::string& at) {
    if (shape.parameters.empty()) return;
    bj::object renamed;
    for (auto& [key, value] : args) {
      const std::string_view name = key;
      if (shape.parameter(name)) {
        renamed[name] = std::move(value);
        continue;
      }
      std::string_view kind;
      const Parameter* target = target_of(name, shape, kind);
      // Never over a parameter the call also gives under its own name.
      if (target && !args.contains(target->name) && !renamed.contains(target->name)) {
        change(kind, at + pointer(name), std::string(name), target->name);
        renamed[target->name] = std::move(value);
      } else if (shape.closed && settings_.repair != RepairMode::kOff) {
        change("unknown_param_dropped", at + pointer(name), std::string(name), "");
      } else {
        renamed[name] = std::move(value);
      }
    }
    // Every value was moved into `renamed`, changed or not.
    args = std::move(renamed);
  }

  void fix_value(bj::object& args, const Parameter& p, bj::value& v, const std::string& at) {
    if (settings_.repair == RepairMode::kOff || p.types.empty()) return;
    if (v.is_null() && !p.accepts("null") && !p.required) {
      change("null_dropped", at + pointer(p.name), "null", "");
      args.erase(p.name);
      return;
    }
    std::string_view kind;
    std::optional<bj::value> to = coerce(p, v, kind);
    if (!to) return;
    change(kind, at + pointer(p.name), abbreviate(bj::serialize(v)),
           abbreviate(bj::serialize(*to)));
    v = std::move(*to);
  }

  bool in_enum(const Parameter& p, const bj::value& v) const {
    return p.enum_values.empty() ||
           std::find(p.enum_values.begin(), p.enum_values.end(), v) != p.enum_values.end();
  }

  // The value `v` becomes for `p`, if the schema leaves one reading.
  std::optional<bj::value> coerce(const Parameter& p, const bj::value& v, std::string_view& kind) {
    const std::string_view type = json_type(v);
    if (p.accepts(type)) {
      if (in_enum(p, v) || !v.is_string()) return std::nullopt;
      kind = "enum_case";
      return enum_case(p, v.get_string());
    }
    kind = "type_coerced";
    for (const auto& t : p.types) {
      std::optional<bj::value> out;
      if (v.is_string()) out = from_string(t, v.get_string(), kind);
      if (!out && t == "array" && !v.is_array() && !v.is_object() && !v.is_null() &&
          (p.item_types.empty() ||
           std::any_of(p.item_types.begin(), p.item_types.end(), [&](const std::string& it) {
             return it == type || (it == "number" && type == "integer");
           }))) {
        kind = "wrapped_in_array";
        out = bj::array{v};
      }
      if (!out && t == "string" && p.enum_values.empty() &&
          settings_.repair == RepairMode::kAggressive && (v.is_number() || v.is_bool())) {
        kind = "type_coerced";
        out = bj::value(bj::serialize(v));
      }
      if (out && in_enum(p, *out)) return out;
      kind = "type_coerced";
    }
    return std::nullopt;
  }

  // A string for a parameter of type `t`: "5" -> 5, "true" -> true, "[1]" -> [1], "{...}".
  std::optional<bj::value> from_string(std::string_view t, std::string_view s,
                                       std::string_view& kind) const {
    if (t == "integer") {
      long long n = 0;
      auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
      if (ec == std::errc() && ptr == s.data() + s.size() && !s.empty() && s.front() != '+')
        return bj::value(n);
      return std::nullopt;
    }
    if (t == "number") {
      boost::system::error_code ec;
      bj::value n = json::parse(s, ec);
      if (!ec && n.is_number()) return n;
      return std::nullopt;
    }
    if (t == "boolean") {
      if (s == "true" || s == "True") return bj::value(true);
      if (s == "false" || s == "False") return bj::value(false);
      return std::nullopt;
    }
    if ((t == "array" && s.starts_with('[')) || (t == "object" && s.starts_with('{'))) {
      JsonRepair fixed = repair_json(s, settings_.repair);
      if (!fixed.ok()) return std::nullopt;
      boost::system::error_code ec;
      bj::value inner = json::parse(fixed.json, ec);
      if (ec || json_type(inner) != t) return std::nullopt;
      kind = "json_string";
      return inner;
    }
    return std::nullopt;
  }

  // "Web" for an enum of "web" and "news": the one member equal up to case.
  std::optional<bj::value> enum_case(const Parameter& p, std::string_view s) const {
    const std::string want = normalize_name(s);
    std::optional<bj::value> found;
    for (const auto& e : p.enum_values) {
      if (!e.is_string() || normalize_name(e.get_string()) != want) continue;
      if (found) return std::nullopt;  // two members match: no guess
      found = e;
    }
    return found;
  }

  void fill_defaults(bj::object& args, const Shape& shape, const std::string& at) {
    if (settings_.repair == RepairMode::kOff) return;
    for (const auto& p : shape.parameters) {
      if (!p.required || !p.default_value || args.contains(p.name)) continue;
      change("default_filled", at + pointer(p.name), "",
             abbreviate(bj::serialize(*p.default_value)));
      args[p.name] = *p.default_value;
    }
  }

  static constexpr std::size_t kMaxMatchedParams = 64;
  const ToolSchema* schema_;
  const config::RepairSettings& settings_;
  ArgumentRepair& out_;
  mutable std::size_t match_attempts_ = 0;
};

}  // namespace

ArgumentRepair repair_arguments(std::string_view raw, const ToolSchema* schema,
                                const config::RepairSettings& settings) {
  ArgumentRepair out;
  ArgumentRepairer repairer(schema, settings, out);
  std::optional<bj::object> args = repairer.to_object(raw);
  if (!args) return out;
  repairer.repair(*args);
  if (!out.changes.empty()) out.arguments = bj::serialize(*args);
  out.parsed = bj::value(std::move(*args));
  return out;
}

}  // namespace toolbridge::repair
