#pragma once
// The small scanning steps the formats share: markers, whitespace, the extent of a JSON value
// (string-aware bracket matching, no parse) and a call object's name and arguments.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"
#include "parse/format.h"

namespace toolbridge::parse {

inline constexpr std::size_t npos = std::string_view::npos;

inline bool starts_at(std::string_view text, std::size_t pos, std::string_view marker) {
  return text.substr(pos, marker.size()) == marker;
}
// text[pos..] is a proper beginning of `marker` (it may still become the marker).
bool cut_marker(std::string_view text, std::size_t pos, std::string_view marker);
std::size_t skip_ws(std::string_view text, std::size_t pos);

// The end of the JSON object or array that opens at `pos` (text[pos] is '{' or '['): past its
// closing bracket, or npos when the text ends first. Brackets in strings are skipped.
std::size_t json_extent(std::string_view text, std::size_t pos);

// A call object {"name": N, "arguments"|"parameters": A} (JSON, repaired when it is not) into
// `out`; a failure saying why when it is not one.
base::Status read_call_object(std::string_view json, RawCall& out);
// True when `json` (whole) looks like a call object: it names "name" and arguments or
// parameters. Cheap; used to tell a call from an object that is just content.
bool looks_like_call(std::string_view json);

// text[from, to) with one newline trimmed at each end (XML-style values).
std::string trim_one_newline(std::string_view text);
std::string trim(std::string_view text);

// Results as `<tool_response>` blocks, one per line group: the convention of hermes and
// qwen3_coder chat templates.
std::string render_tool_response_blocks(const std::vector<ToolResponse>& responses);

}  // namespace toolbridge::parse
