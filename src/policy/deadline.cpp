#include "policy/deadline.h"

#include <fmt/format.h>

#include "upstream/upstream.h"

namespace toolbridge::policy {

std::chrono::milliseconds call_budget(const config::Server& server, const std::string& tool,
                                      std::chrono::milliseconds requested) {
  auto timeout = server.call_timeout;
  if (!tool.empty()) {
    if (auto it = server.tool_timeouts.find(tool); it != server.tool_timeouts.end())
      timeout = it->second;
  }
  if (requested.count() > 0) timeout = std::min(timeout, requested);
  return timeout;
}

boost::asio::awaitable<gateway::Result> DeadlineStage::handle(gateway::Call& call,
                                                              gateway::Next next) {
  // Not a coroutine: an attempt within its deadline costs no frame of its own.
  if (call.deadline == gateway::Call::Clock::time_point::max()) {
    call.timeout =
        call_budget(call.route.upstream->config(), call.route.tool, call.requested_timeout);
    call.deadline = call.started + call.timeout;
  }
  if (clock_.now() >= call.deadline) {
    return gateway::ready(gateway::Result::failure(
        gateway::Fault::kTimeout,
        fmt::format("{} timed out after {:g} s before it could be sent", call.route.display_name,
                    static_cast<double>(call.timeout.count()) / 1000.0)));
  }
  return next(call);
}

}  // namespace toolbridge::policy
