#include "catalog/resolve.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "call/stoppable_wait.h"
#include "catalog/tool_name.h"
#include "json/parse.h"
#include "upstream/upstream.h"

namespace toolbridge::catalog {

namespace bj = boost::json;
using call::Fault;
using call::Result;

ResolveStage::ResolveStage(const Catalog& catalog,
                           const std::vector<std::shared_ptr<upstream::Upstream>>& upstreams,
                           const bool& stopping, std::string separator)
    : catalog_(catalog), stopping_(stopping), separator_(std::move(separator)) {
  for (const auto& up : upstreams) upstreams_.emplace(up->name(), up);
}

void ResolveStage::set_upstreams(const std::vector<std::shared_ptr<upstream::Upstream>>& upstreams,
                                 std::unordered_set<std::string> removed) {
  upstreams_.clear();
  for (const auto& up : upstreams) upstreams_.emplace(up->name(), up);
  for (const auto& up : upstreams) removed.erase(up->name());  // removed, then added again
  // The sessions of a removed server's older versions are refused with it.
  for (const auto& name : removed) older_.erase(name);
  removed_ = std::move(removed);
}

void ResolveStage::keep_sessions_on(const std::shared_ptr<upstream::Upstream>& old) {
  auto& versions = older_[old->name()];
  std::erase_if(versions, [](const auto& w) { return w.expired(); });
  versions.push_back(old);
}

std::shared_ptr<upstream::Upstream> ResolveStage::bound_older(const std::string& server,
                                                              const std::string& key) const {
  if (key.empty() || older_.empty()) return nullptr;
  auto it = older_.find(server);
  if (it == older_.end()) return nullptr;
  for (const auto& w : it->second) {
    if (auto up = w.lock(); up && up->bound(key)) return up;
  }
  return nullptr;
}

boost::asio::awaitable<Result> ResolveStage::handle(call::Call& call, call::Next next) {
  // Not a coroutine: a call that resolves costs no frame of its own.
  if (auto answer = resolve(call)) {
    if (answer->fault == Fault::kInvalidParams) {
      // Not "Unknown tool" for a server that has not listed its tools yet: wait for its start.
      if (auto up = unlisted_server_of(call)) return after_start(call, std::move(up), next);
    }
    return call::ready(std::move(*answer));
  }
  return next(call);
}

std::shared_ptr<upstream::Upstream> ResolveStage::unlisted_server_of(const call::Call& call) const {
  if (!call.is_tool_call() && call.method != "prompts/get") return nullptr;
  const std::string name = call.string_member("name");
  const std::size_t cut = name.find(separator_);
  if (cut == std::string::npos || cut == 0) return nullptr;
  auto it = upstreams_.find(name.substr(0, cut));
  if (it == upstreams_.end() || it->second->catalog()) return nullptr;
  return it->second;
}

boost::asio::awaitable<Result> ResolveStage::after_start(call::Call& call,
                                                         std::shared_ptr<upstream::Upstream> up,
                                                         call::Next next) {
  // The call's own budget (the server's call_timeout, shortened by toolbridge/timeout_ms).
  const auto budget = call::call_budget(up->config(), {}, call.requested_timeout);
  const auto deadline = call.started + budget;
  if (!call.cancelled()) {
    const auto waiting = std::make_shared<call::StoppableWait>();
    call.set_in_flight(waiting);
    co_await up->until_started(deadline, &waiting->stop);
  }
  if (stopping_ || call.cancelled()) {
    co_return Result::failure(stopping_ ? Fault::kShuttingDown : Fault::kCancelled,
                              "the call was cancelled while its server was starting");
  }
  if (!up->catalog()) {
    // Failed to start (its error and the next attempt), disabled, or still starting at the
    // deadline. Routed, so the answer is the server's (its error_prefix applies).
    const std::string name = call.string_member("name");
    route_to(call, up->name(), name, name, "");
    std::string why = up->describe_unavailable();
    if (up->state() == upstream::Upstream::State::kStarting) {
      why = fmt::format("{}; the call waited {:g} s for it (its deadline)", why,
                        static_cast<double>(budget.count()) / 1000.0);
      co_return Result::failure(Fault::kTimeout, std::move(why));
    }
    co_return Result::failure(Fault::kUnavailable, std::move(why));
  }
  if (auto answer = resolve(call)) co_return std::move(*answer);
  Result result = co_await next(call);
  co_return result;
}

std::optional<Result> ResolveStage::resolve(call::Call& call) const {
  if (stopping_) {
    return Result::failure(Fault::kShuttingDown,
                           "the gateway is shutting down; no new calls are accepted");
  }
  if (call.method == "completion/complete") return resolve_completion(call);
  return resolve_named(call);
}

bool ResolveStage::route_to(call::Call& call, const std::string& server, std::string label,
                            std::string display_name, std::string tool) const {
  auto it = upstreams_.find(server);
  if (it == upstreams_.end()) return false;
  // A session bound to an instance of a version a reload replaced keeps it until released.
  std::shared_ptr<upstream::Upstream> up = bound_older(server, call.trajectory);
  if (!up) up = it->second;
  call.set_route(call::Route{std::move(up), server, std::move(tool), std::move(label),
                             std::move(display_name)});
  return true;
}

std::optional<Result> ResolveStage::resolve_named(call::Call& call) const {
  const bool tool = call.method == "tools/call";
  if (tool || call.method == "prompts/get") {
    const std::string name = call.string_member("name");
    const Entry* entry = tool ? catalog_.tool(name) : catalog_.prompt(name);
    if (!entry && tool) {
      // A mistyped tool name: the one meant, if only one fits (tool_name.h).
      ToolNameRepair fixed =
          repair_tool_name(catalog_, call, name, [this](const Entry& e) { return repair_mode(e); });
      if (fixed.answer) return std::move(*fixed.answer);
      entry = fixed.entry;
    }
    if (!entry) {
      return Result::failure(Fault::kInvalidParams,
                             tool ? unknown_tool_message(name) : "Unknown prompt: '" + name + "'");
    }
    if (!route_to(call, entry->server, entry->exposed, entry->exposed,
                  tool ? entry->original : "")) {
      return Result::failure(Fault::kUnavailable, "unknown server " + entry->server);
    }
    call.server_name = entry->original;  // the params the server gets: Call::server_params()
    return std::nullopt;
  }
  // resources/read, resources/subscribe, resources/unsubscribe: routed by URI.
  const std::string uri = call.string_member("uri");
  const std::string* server = catalog_.resource_server(uri);
  if (!server) {
    return Result::failure(Fault::kNotFound, "Resource not found: '" + uri +
                                                 "' matches no server's resources or templates");
  }
  if (!route_to(call, *server, call.method, *server + " " + call.method, "")) {
    return Result::failure(Fault::kUnavailable, "unknown server " + *server);
  }
  return std::nullopt;  // params go as they are, but for _meta: Call::server_params()
}

std::optional<Result> ResolveStage::resolve_completion(call::Call& call) const {
  // The reference is small: it is parsed, renamed and put back; the rest stays raw.
  boost::system::error_code ec;
  bj::value ref = json::parse(call.member("ref"), ec);
  if (!ec && ref.is_object()) {
    auto& r = ref.as_object();
    const auto* type = r.if_contains("type");
    const std::string t = type && type->is_string() ? std::string(type->as_string()) : "";
    const auto* name = r.if_contains("name");
    const auto* uri = r.if_contains("uri");
    const std::string* server = nullptr;
    if (t == "ref/prompt" && name && name->is_string()) {
      if (const Entry* e = catalog_.prompt(name->as_string())) {
        r["name"] = e->original;
        server = &e->server;
      }
    } else if (t == "ref/resource" && uri && uri->is_string()) {
      server = catalog_.resource_server(uri->as_string());
    }
    if (server && route_to(call, *server, call.method, *server + " " + call.method, "")) {
      std::vector<std::pair<std::string_view, std::string>> replace{{"ref", bj::serialize(ref)}};
      std::vector<std::string_view> drop;
      if (call.meta) {
        if (call.meta->empty())
          drop.emplace_back("_meta");
        else
          replace.emplace_back("_meta", *call.meta);
      }
      call.upstream_params = json::rewrite_object(call.params, call.members, replace, drop);
      return std::nullopt;
    }
  }
  // Nobody completes this reference: an empty completion, as the spec allows.
  Result empty;
  empty.response =
      json::make_result(call.id, R"({"completion":{"values":[],"total":0,"hasMore":false}})");
  return empty;
}

config::RepairMode ResolveStage::repair_mode(const Entry& e) const {
  auto it = upstreams_.find(e.server);
  return it == upstreams_.end() ? config::RepairMode::kOff
                                : it->second->config().repair_for(e.original).repair;
}

std::string ResolveStage::unknown_tool_message(const std::string& name) const {
  std::string msg = "Unknown tool: '" + name + "'";
  if (const std::size_t cut = name.find(separator_); cut != std::string::npos && cut > 0) {
    if (const std::string server = name.substr(0, cut); removed_.contains(server))
      msg += " (server '" + server + "' was removed from the configuration by a reload)";
  }
  const auto close = catalog_.suggest_tools(name);
  if (!close.empty()) {
    msg += "; did you mean ";
    for (std::size_t i = 0; i < close.size(); ++i) msg += (i ? ", '" : "'") + close[i] + "'";
  }
  msg += ". tools/list shows the " + std::to_string(catalog_.tool_count()) + " available tools.";
  return msg;
}

}  // namespace toolbridge::catalog
