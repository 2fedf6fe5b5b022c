#pragma once
// Matching a name a model wrote against the names that exist (tools, parameters): exact, then
// normalised (case and separators), then the unique name within a small edit distance. Two or
// more candidates at the first step that finds any: no guess.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace toolbridge::repair {

// Lower case; '-', '.', '/', ' ' and runs of '_' become one '_'; no '_' at either end.
// "Web-Search", "web.search", "web__search" and "web_search" all become "web_search".
std::string normalize_name(std::string_view name);

// `name` as one JSON pointer token ('~' -> "~0", '/' -> "~1"), appended to `out`.
void append_pointer_token(std::string& out, std::string_view name);

enum class MatchKind {
  kExact,       // one candidate has exactly this name
  kNormalised,  // one candidate has it up to case and separators
  kFuzzy,       // one candidate is within the edit-distance bound
  kAmbiguous,   // several candidates at the first step that found any: no guess
  kNone,
};
std::string_view to_string(MatchKind k);

struct NameMatch {
  MatchKind kind = MatchKind::kNone;
  std::vector<std::size_t> candidates;  // indexes into the spellings given, best first
};

// The largest edit distance accepted between normalised names of `length` characters: none
// below 4 characters, 1 up to 7, 2 above (aggressive: up to a third of the length, at most 3,
// and a name that is whole words of exactly one candidate: "python" for "run_python_code").
std::size_t fuzzy_bound(std::size_t length, config::RepairMode mode);

// Names longer than this are matched exactly only.
inline constexpr std::size_t kMaxMatchedName = 128;

// `spellings[i]` are the names candidate i answers to (a tool: "server__tool" and "tool").
// kOff finds exact names only.
NameMatch match_name(std::string_view want, const std::vector<std::vector<std::string>>& spellings,
                     config::RepairMode mode);

}  // namespace toolbridge::repair
