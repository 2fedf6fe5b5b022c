#pragma once
// A tool name the catalog does not have, matched to the one the model meant: the server prefix
// missing or written with another separator, case, '-' for '_', then the unique tool within a
// small edit distance (repair/names.h). The catalog stays the one source of names; the resolve
// stage asks here only when its exact lookup fails.
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "call/call.h"
#include "catalog/catalog.h"
#include "repair/names.h"

namespace toolbridge::catalog {

struct ToolNameMatch {
  repair::MatchKind kind = repair::MatchKind::kNone;
  std::vector<const Entry*> entries;  // best first
};

// The repair mode configured for a tool (by its server and the server's own name).
using ModeOf = std::function<config::RepairMode(const Entry&)>;

// Tools whose server has repair off are never candidates; `cap` (the call's own cap) applies
// to all.
ToolNameMatch match_tool_name(const Catalog& catalog, std::string_view name, const ModeOf& mode_of,
                              config::RepairMode cap);

struct ToolNameRepair {
  const Entry* entry = nullptr;           // the tool meant; the repair is recorded in the call
  std::optional<call::Result> answer;     // several candidates: an isError result naming them
};

// For the resolve stage: `name` (not in the catalog) matched for `call`. Neither set: no
// candidate, the unknown-tool error stands.
ToolNameRepair repair_tool_name(const Catalog& catalog, call::Call& call, std::string_view name,
                                const ModeOf& mode_of);

}  // namespace toolbridge::catalog
