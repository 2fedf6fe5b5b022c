// MCP 2026-07-28 toward remote servers: server/discover before the handshake.
#include <spdlog/spdlog.h>

#include <boost/json.hpp>

#include "mcp/revision.h"
#include "upstream/instance.h"
#include "upstream/stateless.h"

namespace toolbridge::upstream {

namespace asio = boost::asio;
namespace bj = boost::json;

asio::awaitable<bool> Instance::discover() {
  // Only remote servers are probed: a stdio server of the handshake era may take an unknown
  // first request badly, and each process is ours to initialize anyway.
  if (!server_.remote()) co_return false;
  bj::value rejection;
  base::Expected<bj::value> answer =
      co_await request("server/discover", discover_params(), {}, &rejection);
  if (!answer && supports_after_rejection(rejection)) {
    // UnsupportedProtocolVersion that lists 2026-07-28 after all: the revision asks the client
    // to retry with a listed version; once, so a server that always refuses cannot loop us.
    answer = co_await request("server/discover", discover_params());
  }
  if (!answer || !offers_stateless(*answer)) {
    spdlog::debug("[{}] server/discover: {}; using the initialize handshake", server_.name,
                  answer ? std::string("no 2026-07-28 offered") : answer.error());
    co_return false;
  }
  const bj::value& found = *answer;
  std::string version(mcp::kStatelessVersion);
  transport_->set_stateless(std::move(version));
  stateless_ = true;
  if (found.is_object()) keep_server_info(found.as_object());
  if (const auto* c = found.as_object().if_contains("capabilities"); c && c->is_object()) {
    const auto& caps = c->as_object();
    caps_.tools = caps.contains("tools");
    caps_.resources = caps.contains("resources");
    caps_.prompts = caps.contains("prompts");
    caps_.completions = caps.contains("completions");
    // The tasks extension (SEP-2663): the server may answer a tools/call with a task of its own
    // (the gateway passes it through, docs/tasks.md); tasks/cancel is part of the extension.
    const bj::value* ext = caps.if_contains("extensions");
    const bool tasks =
        ext && ext->is_object() && ext->as_object().contains("io.modelcontextprotocol/tasks");
    caps_.tasks_tools_call = tasks;
    caps_.tasks_cancel = tasks;
  }
  spdlog::info("[{}] speaks MCP 2026-07-28: stateless requests, no handshake", server_.name);
  co_return true;
}

}  // namespace toolbridge::upstream
