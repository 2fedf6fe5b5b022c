#pragma once
// The validating walk parse_envelope makes (json/envelope.cpp), over one value: for readers that
// take JSON from its text and must accept exactly what json::parse accepts.
#include <cstddef>
#include <string_view>

namespace toolbridge::json {

struct ValueScan {
  std::size_t end = 0;        // past the value (where the walk stopped if it is not valid)
  bool valid = false;         // JSON within kMaxDepth and kMaxExponentDigits
  bool needs_repair = false;  // a string holds invalid UTF-8 or a lone surrogate escape
  // json::parse reads the value exactly when it is valid and needs no repair.
  bool parses() const { return valid && !needs_repair; }
};

// The value at `offset` of `text`, which `depth` arrays and objects enclose.
ValueScan scan_value(std::string_view text, std::size_t offset, std::size_t depth);

}  // namespace toolbridge::json
