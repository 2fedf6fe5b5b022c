#include "frontend/mcp_stateless.h"

#include <spdlog/spdlog.h>

#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "frontend/client_identity.h"
#include "frontend/param_headers.h"
#include "frontend/router.h"
#include "frontend/trajectory_key.h"
#include "gateway/methods.h"
#include "json/envelope.h"
#include "json/parse.h"
#include "mcp/request_headers.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace bj = boost::json;
namespace http = boost::beast::http;
using gateway::Conversation;
using transport::Exchange;

namespace {

constexpr std::string_view kMetaPrefix = "io.modelcontextprotocol/";

int error_code_of(std::string_view response) {
  const json::Envelope env = json::parse_envelope(response);
  if (env.error.empty()) return 0;
  boost::system::error_code ec;
  const bj::value e = json::parse(env.error.in(response), ec);
  const bj::value* code = !ec && e.is_object() ? e.as_object().if_contains("code") : nullptr;
  return code && code->is_int64() ? static_cast<int>(code->as_int64()) : 0;
}

http::status status_of(std::string_view response) {
  return static_cast<http::status>(mcp::http_status_for(error_code_of(response)));
}

asio::awaitable<void> reply_message(Exchange& ex, std::string body) {
  const http::status status = status_of(body);
  co_await ex.reply(status, "application/json", std::move(body), {});
}

asio::awaitable<void> reply_error(Exchange& ex, std::string_view id, int code,
                                  std::string_view message, std::string_view data = {}) {
  std::string body = json::make_error(id, code, message, data);
  co_await reply_message(ex, std::move(body));
}

std::string server_info_meta() {
  return R"("_meta":{")" + std::string(mcp::kServerInfoMeta) +
         R"(":{"name":"toolbridge","version":"0.1.0"}})";
}

}  // namespace

std::string with_result_members(std::string response, std::string_view members) {
  const json::Envelope env = json::parse_envelope(response);
  if (env.result.empty() || response[env.result.offset] != '{') return response;
  const std::size_t at = env.result.offset + 1;
  const bool empty =
      env.result.in(response).find_first_not_of(" \t\r\n", 1) == env.result.length - 1;
  std::string insert(members);
  if (!empty) insert += ',';
  response.insert(at, insert);
  return response;
}

std::string with_result_type(std::string response) {
  const json::Envelope env = json::parse_envelope(response);
  // A result that says what it is already (input_required, or a server's own) is left alone.
  const auto members = json::object_members(env.result.in(response));
  if (!members) return response;
  for (const auto& m : *members) {
    if (m.name == "resultType") return response;
  }
  return with_result_members(std::move(response), R"("resultType":"complete")");
}

McpStateless::McpStateless(gateway::Gateway& gateway)
    : gateway_(gateway),
      input_required_(gateway.config().gateway.max_input_required,
                      gateway.config().gateway.input_required_ttl, gateway.clock()),
      tasks_(tasks::Limits{gateway.config().gateway.task_ttl,
                           gateway.config().gateway.task_max_per_tenant,
                           gateway.config().gateway.task_max_bytes},
             gateway.clock()) {
  tasks_.on_change = [this](const tasks::Task& t) { task_changed(t); };
  table_ = {
      {"server/discover", &McpStateless::discover},
      {"tools/list", &McpStateless::list},
      {"prompts/list", &McpStateless::list},
      {"resources/list", &McpStateless::list},
      {"resources/templates/list", &McpStateless::list},
      {"subscriptions/listen", &McpStateless::listen},
      {"tools/call", &McpStateless::call},
      {"prompts/get", &McpStateless::call},
      {"resources/read", &McpStateless::call},
      {"completion/complete", &McpStateless::call},
      {"tasks/get", &McpStateless::task_get},
      {"tasks/update", &McpStateless::task_update},
      {"tasks/cancel", &McpStateless::task_cancel},
  };
}

bool McpStateless::claims(const transport::Request& req) {
  if (!header(req, "Mcp-Session-Id").empty()) return false;
  // A version header no handshake revision uses (2026-07-28, or one nobody serves: told so).
  if (const std::string_view v = header(req, "MCP-Protocol-Version"); !v.empty()) {
    return !mcp::parse_version(v);
  }
  const std::string& body = req.body();
  return body.find(mcp::kVersionMeta) != std::string::npos ||
         body.find("\"server/discover\"") != std::string::npos;
}

asio::awaitable<void> McpStateless::not_allowed(Exchange& ex) {
  const std::string body = json::make_error(
      {}, json::kInvalidRequest,
      "Method Not Allowed: protocol 2026-07-28 has no sessions; send each request as a POST "
      "(subscriptions/listen for notifications)");
  const transport::Headers allow{{"Allow", "POST"}};
  co_await ex.reply(http::status::method_not_allowed, "application/json", body, allow);
}

asio::awaitable<void> McpStateless::post(Exchange& ex, std::string_view path_trajectory) {
  const auto& req = ex.request();
  Request r;
  const std::string_view accept = header(req, "Accept");
  r.accepts_sse = accept.find("text/event-stream") != std::string_view::npos;
  const bool accepts_json = accept.empty() ||
                            accept.find("application/json") != std::string::npos ||
                            accept.find("*/*") != std::string::npos;
  if (!accepts_json) {
    co_await reply_error(ex, {}, json::kInvalidRequest,
                         "Not Acceptable: Accept must include application/json");
    co_return;
  }
  boost::system::error_code ec;
  bj::value body = json::parse(req.body(), ec);
  if (ec) {
    const std::string why = "Parse error: " + ec.message();
    co_await reply_error(ex, {}, json::kParseError, why);
    co_return;
  }
  bj::object* msg = body.if_object();
  const bj::value* method = msg ? msg->if_contains("method") : nullptr;
  if (!msg || !method || !method->is_string() || msg->contains("result") ||
      msg->contains("error")) {
    co_await reply_error(ex, {}, json::kInvalidRequest,
                         "Invalid Request: the body must be one JSON-RPC request or notification");
    co_return;
  }
  if (!msg->contains("id")) {
    // Notifications mean nothing without a session (a client cancels by closing its stream).
    const std::string_view v = header(req, "MCP-Protocol-Version");
    if (!v.empty() && !mcp::is_stateless_version(v)) {
      const std::string data = R"({"supported":[")" + std::string(mcp::kStatelessVersion) +
                               R"("],"requested":)" + json::quote(v) + "}";
      co_await reply_error(ex, {}, mcp::kUnsupportedProtocolVersion, "Unsupported protocol version",
                           data);
      co_return;
    }
    co_await ex.reply(http::status::accepted, "", std::string(), {});
    co_return;
  }
  r.id = bj::serialize(msg->at("id"));
  if (auto rejection = mcp::classify(*msg, mcp::headers_of(req), r.envelope)) {
    co_await reply_error(ex, r.id, rejection->code, rejection->message, rejection->data);
    co_return;
  }
  r.method = std::string(method->as_string());
  if (auto* p = msg->if_contains("params"); p && p->is_object())
    r.params = std::move(p->as_object());
  auto it = table_.find(r.method);
  if (it == table_.end()) {
    const std::string why = "Method not found: " + r.method + " (protocol 2026-07-28)";
    co_await reply_error(ex, r.id, json::kMethodNotFound, why);
    co_return;
  }
  base::Expected<std::string> named = named_trajectory(req, path_trajectory);
  if (!named) {
    co_await reply_error(ex, r.id, json::kInvalidParams, named.error());
    co_return;
  }
  r.trajectory = std::move(*named);
  co_await (this->*(it->second))(ex, r);
}

asio::awaitable<void> McpStateless::discover(Exchange& ex, Request& r) {
  const std::string ttl = std::to_string(gateway_.config().gateway.list_ttl.count());
  const std::string result =
      R"({"resultType":"complete","supportedVersions":)" + mcp::all_versions_json() +
      R"(,"capabilities":{"tools":{"listChanged":true},"resources":{},"prompts":{},)"
      R"("completions":{},"extensions":{")" +
      std::string(kTasksExtension) +
      R"(":{}}},)"
      R"("instructions":"Tools from several MCP servers, named server__tool.","ttlMs":)" +
      ttl + R"(,"cacheScope":")" + std::string(cache_scope()) + R"(",)" + server_info_meta() + "}";
  std::string body = json::make_result(r.id, result);
  co_await ex.reply(http::status::ok, "application/json", std::move(body), {});
}

std::string_view McpStateless::cache_scope() const {
  for (const auto& server : gateway_.config().servers) {
    if (server.policy == config::Policy::kPerSession) return "private";
  }
  return "public";
}

asio::awaitable<void> McpStateless::list(Exchange& ex, Request& r) {
  if (!gateway_.settled()) co_await gateway_.until_settled();
  const auto& catalog = gateway_.catalog();
  const std::string& lists = r.method == "tools/list"       ? catalog.tools_json()
                             : r.method == "prompts/list"   ? catalog.prompts_json()
                             : r.method == "resources/list" ? catalog.resources_json()
                                                            : catalog.templates_json();
  const std::string members = R"("resultType":"complete","ttlMs":)" +
                              std::to_string(gateway_.config().gateway.list_ttl.count()) +
                              R"(,"cacheScope":")" + std::string(cache_scope()) + '"';
  std::string body = with_result_members(json::make_result(r.id, lists), members);
  co_await ex.reply(http::status::ok, "application/json", std::move(body), {});
}

std::optional<mcp::Rejection> McpStateless::param_header_mismatch(const Exchange& ex,
                                                                  const Request& r,
                                                                  const std::string& tool) const {
  const catalog::Entry* entry = gateway_.catalog().tool(tool);
  if (!entry || entry->header_params.empty()) return std::nullopt;
  static const bj::object kNoArguments;
  const bj::value* args = r.params.if_contains("arguments");
  const bj::object& arguments = args && args->is_object() ? args->as_object() : kNoArguments;
  return check_param_headers(arguments, entry->header_params, mcp::headers_of(ex.request()));
}

base::Expected<std::shared_ptr<gateway::Session>> McpStateless::session_for(Exchange& ex) {
  base::Expected<std::string> found = owner_of(ex);
  if (!found) return base::fail(found.error());
  std::string& owner = *found;
  if (auto it = sessions_.find(owner); it != sessions_.end()) {
    if (auto s = gateway_.find_session(it->second)) return s;
    sessions_.erase(it);
  }
  // Clients come and go: forget the ones whose session expired before the map grows large.
  if (sessions_.size() >= 4096) {
    std::erase_if(sessions_, [this](const auto& kv) { return !gateway_.find_session(kv.second); });
  }
  auto s = gateway_.create_session(ex.client());
  if (!s) return s;
  (*s)->owner = owner;
  sessions_[std::move(owner)] = (*s)->id();
  return s;
}

void McpStateless::start(const std::shared_ptr<Conversation>& conv, Request& r) {
  gateway_.methods().handle(conv->session, conv, request_text(r));
}

std::string McpStateless::request_text(const Request& r) const {
  bj::object params = r.params;
  params.erase("inputResponses");
  params.erase("requestState");
  if (auto* meta = params.if_contains("_meta"); meta && meta->is_object()) {
    bj::object& m = meta->as_object();
    for (auto it = m.begin(); it != m.end();) {
      it = std::string_view(it->key()).starts_with(kMetaPrefix) ? m.erase(it) : std::next(it);
    }
  }
  if (!r.trajectory.empty()) {
    bj::value& meta = params["_meta"];
    if (!meta.is_object()) meta = bj::object();
    if (!meta.as_object().contains("toolbridge/session"))
      meta.as_object()["toolbridge/session"] = r.trajectory;
  }
  if (auto* meta = params.if_contains("_meta");
      meta && meta->is_object() && meta->as_object().empty())
    params.erase("_meta");
  return json::make_request(r.id, r.method, bj::serialize(params));
}

asio::awaitable<void> McpStateless::call(Exchange& ex, Request& r) {
  bj::object responses;
  if (const bj::value* given = r.params.if_contains("inputResponses")) {
    const bool valid =
        given->is_object() && std::all_of(given->as_object().begin(), given->as_object().end(),
                                          [](const auto& kv) { return kv.value().is_object(); });
    if (!valid) {
      co_await reply_error(ex, r.id, json::kInvalidParams,
                           "inputResponses must be an object whose values are the results of the "
                           "input requests (objects), keyed as inputRequests named them");
      co_return;
    }
    responses = given->as_object();
  }
  const bj::value* name = r.params.if_contains(r.method == "resources/read" ? "uri" : "name");
  const std::string name_text = name && name->is_string() ? std::string(name->as_string()) : "";
  if (const bj::value* state = r.params.if_contains("requestState")) {
    const std::string_view text = state->is_string() ? std::string_view(state->as_string()) : "";
    auto claimed = input_required_.claim(text, r.method, name_text);
    if (!claimed) {
      co_await reply_error(ex, r.id, json::kInvalidParams, claimed.error());
      co_return;
    }
    if (auto conv = std::move(*claimed)) {
      conv->provide(responses);
      co_await answer(ex, conv, r.id);
      co_return;
    }
    // An authentic state whose call is gone (expired, or already answered): run it again; the
    // responses the client sent answer the server's questions as they come.
  }
  if (r.method == "tools/call") {
    if (auto rejection = param_header_mismatch(ex, r, name_text)) {
      co_await reply_error(ex, r.id, rejection->code, rejection->message);
      co_return;
    }
  }
  const std::string support = r.method == "tools/call" ? task_support(name_text) : "";
  const bool tasks = negotiates_tasks(r.envelope);
  if (support == "required" && !tasks) {
    const std::string why = "tool '" + name_text + "' runs only as a task: declare the " +
                            std::string(kTasksExtension) + " extension in clientCapabilities";
    const std::string data =
        R"({"requiredCapabilities":{"extensions":{")" + std::string(kTasksExtension) + R"(":{}}}})";
    co_await reply_error(ex, r.id, mcp::kMissingClientCapability, why, data);
    co_return;
  }
  base::Expected<std::shared_ptr<gateway::Session>> found = session_for(ex);
  if (!found) {
    co_await reply_error(ex, r.id, json::kOverloaded, found.error());
    co_return;
  }
  std::shared_ptr<gateway::Session> session = std::move(*found);
  if (tasks && r.method == "tools/call" && server_tasks_.server_for(name_text)) {
    co_await server_task(ex, r, std::move(session), std::move(responses));
    co_return;
  }
  const bool has_progress = r.params.contains("_meta") && r.params.at("_meta").is_object() &&
                            r.params.at("_meta").as_object().contains("progressToken");
  auto conv = std::make_shared<Conversation>(gateway_.io(), session, r.accepts_sse, r.envelope,
                                             std::move(responses), has_progress);
  conv->session = session;
  conv->method = r.method;
  conv->name = name_text;
  conv->may_become_task = tasks && !support.empty();
  start(conv, r);
  co_await answer(ex, conv, r.id);
}

}  // namespace toolbridge::frontend
