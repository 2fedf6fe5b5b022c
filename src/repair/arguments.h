#pragma once
// A call's arguments against its tool's schema: made an object (a JSON string holding one, or
// malformed JSON, is parsed or repaired), parameter names matched (aliases from config, then
// like tool names), values coerced where the schema leaves one reading ("5" -> 5 for an
// integer, "true" -> true, x -> [x] for an array, a JSON string -> an object or array),
// defaults of missing required parameters filled, nulls of optional ones dropped, unknown ones
// dropped only when the schema forbids them. Objects inside the arguments (and arrays of them)
// whose schema lists their properties get the same rules, down to a bounded depth.
#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "repair/schema.h"

namespace toolbridge::repair {

// One thing repair changed. `kind` is one of a fixed set (metric label); `path` is a JSON pointer
// into the arguments ("" for the arguments as a whole); from/to are short descriptions.
struct Change {
  std::string_view kind;
  std::string path;
  std::string from;
  std::string to;
};

struct ArgumentRepair {
  std::optional<std::string> arguments;  // the new raw JSON object, when something changed
  std::vector<Change> changes;
  std::string problem;  // arguments that are not and could not be made an object
  // The arguments as parsed, when they had to be (for validation): nullopt if only scanned.
  std::optional<boost::json::value> parsed;
};

// True when the raw object `raw` may need a repair for `schema`: one scan of its members, no
// DOM. False means the arguments are left as they are.
bool may_need_repair(std::string_view raw, const ToolSchema& schema,
                     const config::RepairSettings& settings);
// The same with the members already scanned.
bool may_need_repair(std::string_view raw, const std::vector<json::Member>& members,
                     const ToolSchema& schema, const config::RepairSettings& settings);

// `raw`: the raw JSON value of params.arguments, empty when absent. `schema` may be null (no
// schema: only the shape of the arguments is repaired).
ArgumentRepair repair_arguments(std::string_view raw, const ToolSchema* schema,
                                const config::RepairSettings& settings);

// At most `max` bytes of `text`, marked when cut (for from/to descriptions and messages).
std::string abbreviate(std::string_view text, std::size_t max = 120);

}  // namespace toolbridge::repair
