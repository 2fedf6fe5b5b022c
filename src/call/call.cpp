#include "call/call.h"

#include <boost/json.hpp>

#include "upstream/upstream.h"

namespace toolbridge::call {

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

void Call::set_route(Route r) {
  route = std::move(r);
  if (!route.upstream) return;
  holder_ = base::InFlight::Token(route.upstream->holders());
  timeout = call_budget(route.upstream->config(), route.tool, requested_timeout);
  deadline = started + timeout;
}

std::string_view known_result(const Result& r) {
  constexpr std::string_view kName = R"("result":)";
  const json::Span at = r.result_at;
  const std::string_view response = r.response;
  if (at.empty() || at.offset < kName.size() || at.offset + at.length + 1 != response.size() ||
      response.back() != '}' || response.substr(at.offset - kName.size(), kName.size()) != kName) {
    return {};
  }
  return at.in(response);
}

std::string_view to_string(Fault f) {
  switch (f) {
    case Fault::kNone:
      return "none";
    case Fault::kToolError:
      return "tool_error";
    case Fault::kServerError:
      return "server_error";
    case Fault::kInvalidParams:
      return "invalid_params";
    case Fault::kNotFound:
      return "not_found";
    case Fault::kUnavailable:
      return "unavailable";
    case Fault::kOverloaded:
      return "overloaded";
    case Fault::kShed:
      return "shed";
    case Fault::kTimeout:
      return "timeout";
    case Fault::kCrashed:
      return "crashed";
    case Fault::kNotSent:
      return "not_sent";
    case Fault::kCancelled:
      return "cancelled";
    case Fault::kForbidden:
      return "forbidden";
    case Fault::kShuttingDown:
      return "shutting_down";
    case Fault::kInvalidCall:
      return "invalid_call";
  }
  return "unknown";
}

FaultClass fault_class(Fault f) {
  switch (f) {
    case Fault::kNone:
      return FaultClass::kOk;
    case Fault::kInvalidParams:  // unknown tool (repair could not resolve it), malformed params
    case Fault::kInvalidCall:    // schema failure under validate: enforce, ambiguous tool name
    case Fault::kNotFound:       // no server serves the resource
    case Fault::kForbidden:      // the caller's key may not call it
      return FaultClass::kAgent;
    case Fault::kToolError:    // isError
    case Fault::kServerError:  // the server's own JSON-RPC error
      return FaultClass::kTool;
    case Fault::kUnavailable:
    case Fault::kOverloaded:
    case Fault::kShed:
    case Fault::kTimeout:
    case Fault::kCrashed:
    case Fault::kNotSent:
    case Fault::kCancelled:
    case Fault::kShuttingDown:
      return FaultClass::kInfra;
  }
  return FaultClass::kInfra;
}

std::string_view to_string(FaultClass c) {
  switch (c) {
    case FaultClass::kOk:
      return "ok";
    case FaultClass::kAgent:
      return "agent";
    case FaultClass::kTool:
      return "tool";
    case FaultClass::kInfra:
      return "infra";
  }
  return "infra";
}

std::string_view outcome_label(Fault f) {
  switch (f) {
    case Fault::kNone:
      return "ok";
    case Fault::kToolError:
    case Fault::kInvalidCall:
      return "tool_error";
    case Fault::kTimeout:
      return "timeout";
    case Fault::kCrashed:
    case Fault::kNotSent:
      return "crashed";
    case Fault::kUnavailable:
      return "unavailable";
    case Fault::kCancelled:
      return "cancelled";
    case Fault::kShed:
      return "shed";
    default:
      return "error";
  }
}

int error_code(Fault f) {
  switch (f) {
    case Fault::kInvalidParams:
      return json::kInvalidParams;
    case Fault::kNotFound:
      return -32002;  // MCP: resource not found
    case Fault::kForbidden:
      return -32006;  // the gateway's own: not allowed for this API key
    case Fault::kUnavailable:
    case Fault::kShuttingDown:
      return json::kUpstreamUnavailable;
    case Fault::kOverloaded:
    case Fault::kShed:
      return json::kOverloaded;
    case Fault::kTimeout:
      return json::kRequestTimeout;
    case Fault::kCrashed:
      return json::kUpstreamFailed;
    case Fault::kNotSent:
      return json::kNotSent;
    default:
      return json::kInternalError;
  }
}

const std::string& Call::server_params() {
  if (!upstream_params.empty()) return upstream_params;
  const std::string name = server_name.empty() ? std::string() : json::quote(server_name);
  // A tools/call's `task` goes to the server only when the gateway sends it as a task of the
  // server's own (task_augmented): otherwise the server would make a task nobody follows.
  const bool drop_task = is_tool_call() && !task_augmented && !member("task").empty();
  if (!name.empty() && !meta && !drop_task) {
    // The usual call: only the name changes, spliced in; the rest goes as the caller wrote it.
    if (auto spliced = json::with_member_value(params, members, "name", name))
      return upstream_params = std::move(*spliced);
  }
  std::vector<std::pair<std::string_view, std::string>> replace;
  std::vector<std::string_view> drop;
  if (!name.empty()) replace.emplace_back("name", name);
  if (meta) {
    if (meta->empty())
      drop.emplace_back("_meta");
    else
      replace.emplace_back("_meta", *meta);
  }
  if (drop_task) drop.emplace_back("task");
  if (replace.empty() && drop.empty()) return upstream_params = params;
  return upstream_params = json::rewrite_object(params, members, replace, drop);
}

std::string_view Call::member(std::string_view name) const {
  for (const auto& m : members) {
    if (m.name == name) return m.value.in(params);
  }
  return {};
}

std::string Call::string_member(std::string_view name) const {
  const std::string_view raw = member(name);
  if (raw.size() < 2 || raw.front() != '"') return {};
  if (raw.find('\\') == std::string_view::npos) return std::string(raw.substr(1, raw.size() - 2));
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(raw, ec);
  return ec || !v.is_string() ? std::string() : std::string(v.get_string());
}

void Call::cancel(const std::string& reason) {
  if (cancelled_) return;
  cancelled_ = true;
  if (auto attempt = in_flight_.lock()) attempt->abandon(reason);
}

}  // namespace toolbridge::call
