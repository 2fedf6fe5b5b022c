#pragma once
// The resolve stage: which tool (prompt, resource) is this, and which server serves it. It turns
// the exposed name into the server's own (spliced into the raw params; the arguments are never
// parsed), refuses what the catalog does not have with a message an agent can act on, and
// refuses new calls while the gateway stops.
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "call/stage.h"
#include "catalog/catalog.h"

namespace toolbridge::catalog {

class ResolveStage final : public call::Stage {
 public:
  // `separator`: between server and tool names (a name with a configured server's prefix is
  // that server's, even before its tools are listed).
  ResolveStage(const Catalog& catalog,
               const std::vector<std::shared_ptr<upstream::Upstream>>& upstreams,
               const bool& stopping, std::string separator = "__");
  std::string_view name() const override { return "resolve"; }
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next next) override;

  // The route of `call` with its upstream params, or a Result that answers it (an unknown name,
  // a completion nobody serves). Separate from handle() so it can be tested without a chain.
  std::optional<call::Result> resolve(call::Call& call) const;

  // A reload changed the servers: routes go to `upstreams` from now on (calls already routed
  // keep theirs); a tool of a server in `removed` is refused as such rather than as unknown.
  void set_upstreams(const std::vector<std::shared_ptr<upstream::Upstream>>& upstreams,
                     std::unordered_set<std::string> removed);
  // A reload replaced `old` (per_session) with a new version: the sessions bound to one of its
  // instances are routed to it until they are released.
  void keep_sessions_on(const std::shared_ptr<upstream::Upstream>& old);

 private:
  bool route_to(call::Call& call, const std::string& server, std::string label,
                std::string display_name, std::string tool) const;
  std::optional<call::Result> resolve_named(call::Call& call) const;
  std::optional<call::Result> resolve_completion(call::Call& call) const;
  std::string unknown_tool_message(const std::string& name) const;
  // The configured server whose prefix `call`'s tool name has, if that server has not listed
  // its tools yet (starting, failed to start, disabled); else null.
  std::shared_ptr<upstream::Upstream> unlisted_server_of(const call::Call& call) const;
  // Waits for that server's start (within the call's budget), then resolves again.
  boost::asio::awaitable<call::Result> after_start(call::Call& call,
                                                   std::shared_ptr<upstream::Upstream> up,
                                                   call::Next next);
  config::RepairMode repair_mode(const Entry& e) const;
  // The older version of `server` an instance of which is bound to session `key`, or null.
  std::shared_ptr<upstream::Upstream> bound_older(const std::string& server,
                                                  const std::string& key) const;

  const Catalog& catalog_;
  std::unordered_map<std::string, std::shared_ptr<upstream::Upstream>> upstreams_;
  std::unordered_set<std::string> removed_;  // servers a reload removed
  // per_session versions a reload replaced, by server, while sessions may be bound to them.
  std::unordered_map<std::string, std::vector<std::weak_ptr<upstream::Upstream>>> older_;
  const bool& stopping_;
  std::string separator_;
};

}  // namespace toolbridge::catalog
