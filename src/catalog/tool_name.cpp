#include "catalog/tool_name.h"

#include <spdlog/spdlog.h>

#include "repair/answer.h"
#include "repair/names.h"

namespace toolbridge::catalog {

using config::RepairMode;
using repair::MatchKind;

namespace {

ToolNameMatch match_among(const std::vector<const Entry*>& group, std::string_view name,
                          RepairMode mode) {
  std::vector<std::vector<std::string>> spellings;
  spellings.reserve(group.size());
  for (const Entry* e : group) {
    // "server__tool" as exposed, "tool" alone (the prefix missing), and server + tool in any
    // separator (normalised to the same name).
    spellings.push_back({e->exposed, e->original, e->server + "_" + e->original});
  }
  const repair::NameMatch m = repair::match_name(name, spellings, mode);
  ToolNameMatch out{m.kind, {}};
  for (std::size_t i : m.candidates) out.entries.push_back(group[i]);
  return out;
}

}  // namespace

ToolNameMatch match_tool_name(const Catalog& catalog, std::string_view name, const ModeOf& mode_of,
                              RepairMode cap) {
  if (cap == RepairMode::kOff || name.empty()) return {};
  std::vector<const Entry*> on, aggressive;
  for (const auto& [exposed, entry] : catalog.tool_entries()) {
    const RepairMode m = std::min(mode_of(entry), cap);
    if (m == RepairMode::kOff) continue;
    on.push_back(&entry);
    if (m == RepairMode::kAggressive) aggressive.push_back(&entry);
  }
  // Every tool whose server repairs takes part at the safe bounds; the looser aggressive
  // bounds apply only among tools of servers configured for them.
  ToolNameMatch m = match_among(on, name, RepairMode::kSafe);
  if (m.kind == MatchKind::kNone && !aggressive.empty()) {
    m = match_among(aggressive, name, RepairMode::kAggressive);
  }
  return m;
}

ToolNameRepair repair_tool_name(const Catalog& catalog, call::Call& call, std::string_view name,
                                const ModeOf& mode_of) {
  const ToolNameMatch m = match_tool_name(catalog, name, mode_of,
                                          repair::effective_mode(RepairMode::kAggressive, call));
  ToolNameRepair out;
  if (m.kind == MatchKind::kAmbiguous) {
    std::string text = "No tool '" + std::string(name) + "'; did you mean ";
    const std::size_t shown = std::min<std::size_t>(m.entries.size(), 5);
    for (std::size_t i = 0; i < shown; ++i) {
      text += (i == 0 ? "'" : i + 1 == shown ? " or '" : ", '") + m.entries[i]->exposed + "'";
    }
    if (m.entries.size() > shown)
      text += " (or " + std::to_string(m.entries.size() - shown) + " more)";
    text += "? Call it again by its full name.";
    out.answer = repair::tool_error(call, text);
  } else if (m.kind != MatchKind::kNone) {
    out.entry = m.entries.front();
    spdlog::debug("tools/call {}: tool name '{}' repaired to '{}' ({})", call.id, name,
                  out.entry->exposed, to_string(m.kind));
    call.repairs.push_back({"tool_name", "", std::string(name), out.entry->exposed});
  }
  return out;
}

}  // namespace toolbridge::catalog
