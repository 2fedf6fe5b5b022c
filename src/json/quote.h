#pragma once
// JSON string literals appended to text being built by hand (records, answers, messages): one
// helper for every writer, so escaping has one definition.
#include <string>
#include <string_view>

namespace toolbridge::json {

// The JSON string literal of `s` (quotes included) appended to `out`: text of printable ASCII
// without '"' or '\\' (tool and server names, ids) is copied as it is, with no temporary string.
void append_quoted(std::string& out, std::string_view s);

}  // namespace toolbridge::json
