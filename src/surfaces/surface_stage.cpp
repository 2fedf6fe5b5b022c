#include "surfaces/surface_stage.h"

#include <algorithm>

#include "json/envelope.h"
#include "repair/answer.h"
#include "repair/names.h"

namespace toolbridge::surfaces {

using call::Fault;
using call::Result;

void set_surface(call::Call& call, std::shared_ptr<const View> view) {
  call.slots.get<CallSurface>().view = std::move(view);
}

const View* surface_of(const call::Call& call) {
  const CallSurface* s = call.slots.find<CallSurface>();
  return s ? s->view.get() : nullptr;
}

bool SurfaceStage::applies(const call::Call& call) const {
  return call.is_tool_call() && surface_of(call);
}

boost::asio::awaitable<Result> SurfaceStage::handle(call::Call& call, call::Next next) {
  if (auto refusal = translate(call, *surface_of(call), mode_of_))
    return call::ready(std::move(*refusal));
  return next(call);
}

std::string unknown_tool_message(const View& view, std::string_view name) {
  std::string msg = "Unknown tool: '" + std::string(name) + "'";
  const auto close = view.suggest(name);
  if (!close.empty()) {
    msg += "; did you mean ";
    for (std::size_t i = 0; i < close.size(); ++i) msg += (i ? ", '" : "'") + close[i] + "'";
  }
  msg += ". tools/list shows the " + std::to_string(view.tools().size()) + " available tools.";
  return msg;
}

const Tool* repair_within(const View& view, std::string_view name, config::RepairMode cap,
                          const RepairModeOf& mode_of) {
  if (!mode_of || cap == config::RepairMode::kOff || name.empty()) return nullptr;
  std::vector<const Tool*> group;
  std::vector<std::vector<std::string>> spellings;
  for (const Tool& t : view.tools()) {
    if (std::min(mode_of(t), cap) == config::RepairMode::kOff) continue;
    group.push_back(&t);
    spellings.push_back({t.shown});
  }
  const repair::NameMatch m = repair::match_name(name, spellings, config::RepairMode::kSafe);
  if (m.kind == repair::MatchKind::kNone || m.kind == repair::MatchKind::kAmbiguous) return nullptr;
  return group[m.candidates.front()];
}

namespace {
// The tool `name` mistypes, within the surface and as far as the call's own _meta allows, the
// repair recorded in the call; else null.
const Tool* repaired(call::Call& call, const View& view, const std::string& name,
                     const RepairModeOf& mode_of) {
  const config::RepairMode cap = repair::effective_mode(config::RepairMode::kSafe, call);
  const Tool* tool = repair_within(view, name, cap, mode_of);
  if (tool) call.repairs.push_back({"tool_name", "", name, tool->shown});
  return tool;
}
}  // namespace

std::optional<Result> SurfaceStage::translate(call::Call& call, const View& view,
                                              const RepairModeOf& mode_of) {
  const std::string name = call.string_member("name");
  const Tool* tool = view.find(name);
  if (!tool) tool = repaired(call, view, name, mode_of);
  if (!tool) return Result::failure(Fault::kInvalidParams, unknown_tool_message(view, name));
  std::vector<std::pair<std::string_view, std::string>> replace{
      {"name", json::quote(tool->exposed)}};
  if (!tool->defaults.empty()) {
    auto args = with_defaults(call.member("arguments"), tool->defaults);
    if (!args) {
      return Result::failure(Fault::kInvalidParams,
                             "'arguments' of tool '" + name + "' must be a JSON object");
    }
    replace.emplace_back("arguments", std::move(*args));
  }
  call.params = json::rewrite_object(call.params, call.members, replace, {});
  // One scan of what was just written: it is an object by construction.
  call.members = json::object_members(call.params).value_or(std::vector<json::Member>{});
  return std::nullopt;
}

}  // namespace toolbridge::surfaces
