#pragma once
// Malformed JSON from a model made into JSON: trailing commas, single or typographic quotes,
// unquoted keys, Python literals, comments, code fences, raw line breaks in strings, a cut-off
// end closed minimally. `safe` fixes only what has one reading; `aggressive` also closes a
// string cut off mid-way, drops a dangling key, inserts a missing comma before a string, reads
// an apostrophe inside a single-quoted string as text and keeps the object inside prose.
// Bounded: kMaxRepairBytes of input, json::kMaxDepth levels.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace toolbridge::repair {

inline constexpr std::size_t kMaxRepairBytes = 1u << 20;

struct JsonRepair {
  std::string json;                     // strict JSON; empty when it could not be repaired
  std::vector<std::string_view> fixes;  // what was done, each kind once, in order
  std::string problem;                  // why not, when json is empty
  bool ok() const { return !json.empty(); }
};

// `text` made strict JSON (one value). Text that is already JSON comes back unchanged with no
// fixes. kOff repairs nothing.
JsonRepair repair_json(std::string_view text, config::RepairMode mode);

}  // namespace toolbridge::repair
