// valijson's default on a schema it cannot handle is to print and abort(): a server's schema
// must never end the gateway, so it throws instead (caught below). Only this file includes it.
#define VALIJSON_USE_EXCEPTIONS 1

#include "repair/schema.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <valijson/adapters/boost_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "base/marks.h"
#include "repair/names.h"

namespace toolbridge::repair {

namespace bj = boost::json;

bool Parameter::accepts(std::string_view type) const {
  if (types.empty()) return true;
  for (const auto& t : types) {
    if (t == type || (t == "number" && type == "integer")) return true;
  }
  return false;
}

std::string_view json_type(const bj::value& v) {
  switch (v.kind()) {
    case bj::kind::null:
      return "null";
    case bj::kind::bool_:
      return "boolean";
    case bj::kind::int64:
    case bj::kind::uint64:
      return "integer";
    case bj::kind::double_: {
      const double d = v.get_double();
      return std::isfinite(d) && d == std::floor(d) ? "integer" : "number";
    }
    case bj::kind::string:
      return "string";
    case bj::kind::array:
      return "array";
    case bj::kind::object:
      return "object";
  }
  return "null";
}

std::string_view raw_json_type(std::string_view raw) {
  if (raw.empty()) return "null";
  switch (raw.front()) {
    case '"':
      return "string";
    case '{':
      return "object";
    case '[':
      return "array";
    case 't':
    case 'f':
      return "boolean";
    case 'n':
      return "null";
    default:
      return raw.find_first_of(".eE") == std::string_view::npos ? "integer" : "number";
  }
}

namespace {

bool one_of(std::string_view key, std::initializer_list<std::string_view> keys) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// Only keywords the scan checks, or that constrain nothing.
bool scannable_parameter(const bj::value& def) {
  if (!def.is_object()) return false;
  for (const auto& [key, value] : def.get_object()) {
    if (key == "type") {
      std::vector<std::string> types;
      if (value.is_string()) types.emplace_back(value.get_string());
      if (value.is_array()) {
        for (const auto& t : value.get_array()) {
          if (!t.is_string()) return false;
          types.emplace_back(t.get_string());
        }
      }
      for (const auto& t : types) {
        if (!one_of(t, {"string", "integer", "number", "boolean", "null"})) return false;
      }
    } else if (key == "enum") {
      if (!value.is_array()) return false;
      for (const auto& e : value.get_array()) {
        if (!e.is_string()) return false;
      }
    } else if (!one_of(key, {"description", "title", "default", "examples", "deprecated"})) {
      return false;
    }
  }
  return true;
}

bool scannable(const bj::object& root) {
  for (const auto& [key, value] : root) {
    if (key == "properties") {
      if (!value.is_object()) return false;
      for (const auto& [name, def] : value.get_object()) {
        if (!scannable_parameter(def)) return false;
      }
    } else if (key == "additionalProperties") {
      if (!value.is_bool()) return false;
    } else if (key == "type") {
      if (value != "object") return false;
    } else if (!one_of(key, {"required", "$schema", "title", "description"})) {
      return false;
    }
  }
  return true;
}

std::vector<std::string> type_names(const bj::object& s) {
  std::vector<std::string> out;
  const bj::value* t = s.if_contains("type");
  if (!t) return out;
  if (t->is_string()) out.emplace_back(t->get_string());
  if (t->is_array()) {
    for (const auto& x : t->get_array()) {
      if (x.is_string()) out.emplace_back(x.get_string());
    }
  }
  return out;
}

Shape read_shape(const bj::object& s, std::size_t depth);

// Bounded: a server's schema nested deeper is repaired down to this depth only.
constexpr std::size_t kMaxShapeDepth = 16;

Parameter read_parameter(const std::string& name, const bj::value& def, std::size_t depth) {
  Parameter p;
  p.name = name;
  if (!def.is_object()) return p;
  const bj::object& s = def.get_object();
  p.types = type_names(s);
  if (const bj::value* e = s.if_contains("enum"); e && e->is_array()) {
    for (const auto& v : e->get_array()) {
      p.enum_values.push_back(v);
      if (v.is_string()) p.quoted_enum.push_back(bj::serialize(v));
    }
  }
  if (const bj::value* d = s.if_contains("default")) p.default_value = *d;
  if (const bj::value* items = s.if_contains("items"); items && items->is_object()) {
    p.item_types = type_names(items->get_object());
    if (depth < kMaxShapeDepth && items->get_object().contains("properties")) {
      p.item_fields = std::make_shared<Shape>(read_shape(items->get_object(), depth + 1));
    }
  }
  if (depth < kMaxShapeDepth && s.contains("properties")) {
    p.fields = std::make_shared<Shape>(read_shape(s, depth + 1));
  }
  return p;
}

Shape read_shape(const bj::object& s, std::size_t depth) {
  Shape shape;
  if (const bj::value* props = s.if_contains("properties"); props && props->is_object()) {
    for (const auto& [name, def] : props->get_object()) {
      shape.parameters.push_back(read_parameter(std::string(name), def, depth));
    }
  }
  if (const bj::value* req = s.if_contains("required"); req && req->is_array()) {
    for (const auto& r : req->get_array()) {
      if (!r.is_string()) continue;
      for (auto& p : shape.parameters) {
        if (p.name == r.get_string()) p.required = true;
      }
    }
  }
  const bj::value* extra = s.if_contains("additionalProperties");
  shape.closed = extra && extra->is_bool() && !extra->get_bool();
  return shape;
}

// valijson's context ("<root>", "[name]", "[0]") as a JSON pointer.
std::string pointer_of(const std::vector<std::string>& context) {
  std::string out;
  for (const auto& part : context) {
    if (part == "<root>") continue;
    std::string_view seg = part;
    if (seg.size() >= 2 && seg.front() == '[' && seg.back() == ']')
      seg = seg.substr(1, seg.size() - 2);
    out += '/';
    append_pointer_token(out, seg);
  }
  return out;
}

}  // namespace

ToolSchema::~ToolSchema() = default;

std::shared_ptr<const ToolSchema> ToolSchema::compile(const bj::value& input_schema) {
  std::shared_ptr<ToolSchema> s(new ToolSchema());
  if (!input_schema.is_object()) {
    s->error_ = "inputSchema is not an object";
    return s;
  }
  const bj::object& root = input_schema.get_object();
  s->root_ = read_shape(root, 0);
  s->nested_ = std::any_of(s->root_.parameters.begin(), s->root_.parameters.end(),
                           [](const Parameter& p) { return p.fields || p.item_fields; });
  s->scannable_ = scannable(root);
  try {
    auto schema = std::make_unique<valijson::Schema>();
    valijson::SchemaParser parser;
    valijson::adapters::BoostJsonAdapter adapter(input_schema);
    parser.populateSchema(adapter, *schema);
    s->schema_ = std::move(schema);
  } catch (const std::exception& e) {
    s->error_ = e.what();
  }
  return s;
}

const Parameter* Shape::parameter(std::string_view name) const {
  for (const auto& p : parameters) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

bool ToolSchema::valid_by_scan(std::string_view raw,
                               const std::vector<json::Member>& members) const {
  if (!scannable_ || !compiled()) return false;
  // Each required parameter present (a name given twice counts once).
  const auto& params = root_.parameters;
  base::Marks present(params.size());  // which were given
  for (const auto& m : members) {
    const Parameter* p = parameter(m.name);
    if (!p) {
      if (root_.closed) return false;
      continue;
    }
    const std::string_view value = m.value.in(raw);
    if (!p->accepts(raw_json_type(value))) return false;
    // An enum member is compared as written; another spelling of the same string is left to
    // validate().
    if (!p->quoted_enum.empty() &&
        std::find(p->quoted_enum.begin(), p->quoted_enum.end(), value) == p->quoted_enum.end())
      return false;
    present.mark(static_cast<std::size_t>(p - params.data()));
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (params[i].required && !present.marked(i)) return false;
  }
  return true;
}

std::vector<Violation> ToolSchema::validate(const bj::value& arguments) const {
  std::vector<Violation> out;
  if (!schema_) return out;
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::BoostJsonAdapter target(arguments);
  try {
    if (validator.validate(*schema_, target, &results)) return out;
  } catch (const std::exception& e) {
    // A pattern std::regex cannot handle, for instance: the server's schema, not the call.
    return out;
  }
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    std::string pointer = pointer_of(error.context);
    // valijson adds a summary per enclosing level ("Failed to validate against schema
    // associated with property name 'x'."); the specific errors say it better.
    if (error.description.starts_with("Failed to validate against schema associated")) continue;
    if (std::any_of(out.begin(), out.end(), [&](const Violation& v) {
          return v.pointer == pointer && v.message == error.description;
        }))
      continue;
    out.push_back({std::move(pointer), std::move(error.description)});
  }
  return out;
}

}  // namespace toolbridge::repair
