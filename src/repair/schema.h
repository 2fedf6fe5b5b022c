#pragma once
// A tool's inputSchema, compiled once when the catalog is built: the valijson schema that
// validates calls, and what repair needs to know of each top-level parameter (its types, enum,
// default, whether it is required). A schema that does not compile is kept with its error, so
// it is reported once, at the catalog build, not per call.
#include <boost/json/value.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "json/envelope.h"

namespace valijson {
class Schema;
}

namespace toolbridge::repair {

struct Shape;

struct Parameter {
  std::string name;
  std::vector<std::string> types;  // JSON Schema type names; empty: any
  std::vector<boost::json::value> enum_values;
  std::vector<std::string> quoted_enum;  // the string members of enum as raw JSON, for the scan
  std::optional<boost::json::value> default_value;
  std::vector<std::string> item_types;  // arrays: the items' types; empty: any
  bool required = false;
  // Objects with properties, and arrays of them: their own parameters, repaired the same way.
  std::shared_ptr<const Shape> fields;
  std::shared_ptr<const Shape> item_fields;

  // Does a value of JSON type `type` ("integer" for whole numbers) satisfy `types`?
  bool accepts(std::string_view type) const;
};

// The parameters of one object of a schema (the arguments, or an object inside them).
struct Shape {
  std::vector<Parameter> parameters;
  bool closed = false;  // additionalProperties: false
  const Parameter* parameter(std::string_view name) const;
};

// One violation of the schema: where (a JSON pointer into the arguments, "" for the whole
// object) and what.
struct Violation {
  std::string pointer;
  std::string message;
};

class ToolSchema {
 public:
  // Never throws: a schema valijson cannot compile gives a ToolSchema with error() set.
  static std::shared_ptr<const ToolSchema> compile(const boost::json::value& input_schema);
  ~ToolSchema();

  bool compiled() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const Shape& shape() const { return root_; }
  const std::vector<Parameter>& parameters() const { return root_.parameters; }
  const Parameter* parameter(std::string_view name) const { return root_.parameter(name); }
  // additionalProperties: false — unknown parameters may be dropped.
  bool closed() const { return root_.closed; }
  // Some parameter has parameters of its own (objects, arrays of objects).
  bool nested() const { return nested_; }

  // Every violation of `arguments` (empty when valid, or when the schema did not compile).
  std::vector<Violation> validate(const boost::json::value& arguments) const;

  // True when one scan of the object's members (`members` of `raw`) proves the arguments valid:
  // for schemas of top-level scalar parameters (types, string enums, required,
  // additionalProperties: false), the common case, no DOM is built and valijson is not run.
  // False means "not proven": validate() decides.
  bool valid_by_scan(std::string_view raw, const std::vector<json::Member>& members) const;

 private:
  ToolSchema() = default;
  std::unique_ptr<valijson::Schema> schema_;
  std::string error_;
  Shape root_;
  bool nested_ = false;
  bool scannable_ = false;  // valid_by_scan() can prove validity for this schema
};

// The JSON type name of `v` as a schema says it ("integer" for whole numbers).
std::string_view json_type(const boost::json::value& v);
// The same for a raw JSON value, from its first byte (numbers: "integer" unless they have a
// fraction or an exponent).
std::string_view raw_json_type(std::string_view raw);

// A tool's compiled schema by its exposed name: nullopt for a tool that does not exist, null
// for one without an inputSchema. The catalog provides it (catalog::schemas_of), so repair
// need not depend on the catalog.
using SchemaOf = std::function<std::optional<const ToolSchema*>(std::string_view label)>;

}  // namespace toolbridge::repair
