#pragma once
// The surface stage, first in the chain: a call made through a surface (/s/NAME/mcp, the
// X-Toolbridge-Surface header, a batch or parse entry's `surface`) names its tool as the
// surface shows it. The stage turns that name into the gateway's and fills the hidden
// arguments; a name the surface does not show is refused as an unknown tool is, so nothing
// outside the surface is reachable (not even by name repair, which then sees the gateway name).
#include <functional>
#include <memory>

#include "call/stage.h"
#include "config/config.h"
#include "surfaces/view.h"

namespace toolbridge::surfaces {

// The surface a call was made through (a slot of the call; none: the whole catalog).
struct CallSurface {
  std::shared_ptr<const View> view;
};

// Marks `call` as made through `view`.
void set_surface(call::Call& call, std::shared_ptr<const View> view);
// The surface `call` was made through, or null.
const View* surface_of(const call::Call& call);

// The repair mode configured for a tool (its server's, for the server's own name).
using RepairModeOf = std::function<config::RepairMode(const Tool&)>;

class SurfaceStage final : public call::Stage {
 public:
  // `mode_of` null: a mistyped name is never repaired.
  explicit SurfaceStage(RepairModeOf mode_of = nullptr) : mode_of_(std::move(mode_of)) {}
  std::string_view name() const override { return "surface"; }
  bool applies(const call::Call& call) const override;
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next next) override;

  // The refusal of a call, or nullopt with its params rewritten for the gateway (a test's door).
  // A name the surface does not show is repaired among the surface's names only (the safe
  // bounds of repair/names.h, where the tool's server repairs), recorded in call.repairs.
  static std::optional<call::Result> translate(call::Call& call, const View& view,
                                               const RepairModeOf& mode_of = nullptr);

 private:
  RepairModeOf mode_of_;
};

// The one tool of `view` that `name` mistypes (the safe bounds of repair/names.h), among tools
// whose server repairs (capped by `cap`); null when none, or several, fit.
const Tool* repair_within(const View& view, std::string_view name, config::RepairMode cap,
                          const RepairModeOf& mode_of);

// "Unknown tool: 'x'; did you mean 'y'. tools/list shows the N available tools." within `view`.
std::string unknown_tool_message(const View& view, std::string_view name);

}  // namespace toolbridge::surfaces
