// The MCP tasks extension (SEP-2663) for stateless (2026-07-28) clients, for every server: a
// tools/call of a task-supporting tool from a client that declared the extension becomes a task
// kept by the gateway when it does not end within a short window; tasks/get, tasks/update and
// tasks/cancel then reach it by id, for its owner only. docs/tasks.md has the rules.
#include <fmt/format.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "base/spawn.h"
#include "frontend/client_identity.h"
#include "frontend/event_stream.h"
#include "frontend/mcp_stateless.h"
#include "gateway/methods.h"
#include "json/envelope.h"
#include "json/parse.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace bj = boost::json;
namespace http = boost::beast::http;
using gateway::Conversation;
using transport::Exchange;

namespace {

constexpr auto kIdleWake = std::chrono::seconds(15);

// The call behind a task, as the store drives it: a stateless Conversation (whose server
// requests wait for tasks/update) or a session's PostStream (whose go to the client's stream).
class CallRun final : public tasks::Run {
 public:
  CallRun(gateway::Methods& methods, std::weak_ptr<gateway::PostStream> stream,
          std::weak_ptr<gateway::Session> session, std::weak_ptr<call::Call> call)
      : methods_(methods),
        stream_(std::move(stream)),
        session_(std::move(session)),
        call_(std::move(call)) {}

  void cancel(const std::string& why) override {
    auto s = stream_.lock();
    if (!s) return;
    if (auto* c = dynamic_cast<Conversation*>(s.get())) c->refuse_all(why);
    if (auto call = call_.lock(); call && !call->cancelled()) {
      // A call taken out of its session (it outlives it): cancelled here, not by the session.
      call->cancel(why);
      if (s->outstanding > 0) --s->outstanding;
    } else if (auto session = session_.lock()) {
      methods_.abandon(session, s, why);
    }
    s->channel.notify();
  }

  std::string provide(const bj::object& responses) override {
    auto s = stream_.lock();
    auto* c = s ? dynamic_cast<Conversation*>(s.get()) : nullptr;
    if (!c) return {};
    c->provide(responses);
    c->channel.notify();
    return c->has_asks() ? c->pending_requests() : std::string();
  }

 private:
  gateway::Methods& methods_;
  std::weak_ptr<gateway::PostStream> stream_;
  std::weak_ptr<gateway::Session> session_;
  std::weak_ptr<call::Call> call_;  // set when the call is no longer the session's
};

// The statusMessage a notifications/progress gives a running task: its message, else "P of T"
// (or "P"); empty for any other message.
std::string progress_text(std::string_view message) {
  const json::Envelope env = json::parse_envelope(message);
  if (env.method != "notifications/progress") return {};
  boost::system::error_code ec;
  const bj::value p = json::parse(env.params.in(message), ec);
  if (ec || !p.is_object()) return {};
  const bj::object& o = p.as_object();
  if (const bj::value* m = o.if_contains("message"); m && m->is_string())
    return std::string(m->as_string());
  const auto number = [](const bj::value* v) {
    return v && v->is_number() ? fmt::format("{}", v->to_number<double>()) : std::string();
  };
  std::string text = number(o.if_contains("progress"));
  if (text.empty()) return {};
  if (std::string total = number(o.if_contains("total")); !total.empty()) text += " of " + total;
  return "progress " + text;
}

std::string error_response(std::string_view id, int code, std::string_view message,
                           std::string_view data = {}) {
  return json::make_error(id, code, message, data);
}

// The members every task envelope carries (CreateTaskResult and tasks/get).
std::string task_members(const tasks::Task& t, std::chrono::milliseconds ttl) {
  return R"("taskId":)" + json::quote(t.id) + R"(,"status":")" +
         std::string(tasks::to_string(t.status)) + R"(","createdAt":")" +
         tasks::iso8601(t.created) + R"(","lastUpdatedAt":")" + tasks::iso8601(t.updated) +
         R"(","ttlMs":)" + std::to_string(ttl.count()) + R"(,"pollIntervalMs":)" +
         std::to_string(kTaskPollIntervalMs);
}

// A DetailedTask's members: the envelope's, plus what its status carries (tasks/get and
// notifications/tasks).
std::string detailed_members(const tasks::Task& t, std::chrono::milliseconds ttl) {
  std::string members = task_members(t, ttl);
  if (!t.status_message.empty()) members += R"(,"statusMessage":)" + json::quote(t.status_message);
  if (t.status == tasks::Status::kCompleted) members += R"(,"result":)" + t.result;
  if (t.status == tasks::Status::kFailed) members += R"(,"error":)" + t.error;
  if (t.status == tasks::Status::kInputRequired)
    members += R"(,"inputRequests":)" + t.input_requests;
  return members;
}

asio::awaitable<void> reply(Exchange& ex, std::string body) {
  const json::Envelope env = json::parse_envelope(body);
  int code = 0;
  if (!env.error.empty()) {
    boost::system::error_code ec;
    const bj::value e = json::parse(env.error.in(body), ec);
    const bj::value* c = !ec && e.is_object() ? e.as_object().if_contains("code") : nullptr;
    code = c && c->is_int64() ? static_cast<int>(c->as_int64()) : 0;
  }
  const auto status = static_cast<http::status>(mcp::http_status_for(code));
  co_await ex.reply(status, "application/json", std::move(body), {});
}

}  // namespace

std::string unknown_task_message(std::string_view task_id) {
  return "unknown task '" + std::string(task_id) +
         "' (never made, expired after gateway.task_ttl, or another tenant's)";
}

bool negotiates_tasks(const mcp::StatelessEnvelope& envelope) {
  const bj::value* ext = envelope.capabilities.if_contains("extensions");
  return ext && ext->is_object() && ext->as_object().contains(kTasksExtension);
}

std::string McpStateless::task_support(std::string_view tool) const {
  const catalog::Entry* entry = gateway_.catalog().tool(tool);
  if (!entry) return {};
  if (!entry->task_support.empty()) return entry->task_support;
  for (const auto& server : gateway_.config().servers) {
    if (server.name != entry->server) continue;
    for (const auto& t : server.task_tools) {
      if (t == "*" || t == entry->original) return "optional";
    }
  }
  return {};
}

base::Expected<tasks::Task*> McpStateless::adopt(const std::shared_ptr<gateway::PostStream>& stream,
                                                 const std::shared_ptr<gateway::Session>& session,
                                                 const std::string& owner,
                                                 std::weak_ptr<call::Call> call) {
  auto run = std::make_shared<CallRun>(gateway_.methods(), stream, session, std::move(call));
  base::Expected<tasks::Task*> task = tasks_.create(owner, run);
  if (!task) {
    run->cancel(task.error());
    return task;
  }
  asio::co_spawn(gateway_.io(), run_task(stream, (*task)->id), base::log_failure("task follower"));
  return task;
}

std::string McpStateless::become_task(const std::shared_ptr<Conversation>& conv,
                                      std::string_view id) {
  const std::string owner = conv->session ? conv->session->owner : std::string();
  base::Expected<tasks::Task*> task = adopt(conv, conv->session, owner);
  if (!task) {
    conv->detached = true;
    return error_response(id, json::kOverloaded, task.error());
  }
  conv->task_id = (*task)->id;
  return json::make_result(
      id, R"({"resultType":"task",)" + task_members(**task, tasks_.limits().ttl) + "}");
}

asio::awaitable<void> McpStateless::server_task(Exchange& ex, Request& r,
                                                std::shared_ptr<gateway::Session> session,
                                                bj::object provided) {
  boost::system::error_code ec;
  bj::value msg = json::parse(request_text(r), ec);
  bj::object* params = ec ? nullptr : params_of(msg);
  // The server's task: the legacy `task` param the client may have sent is its request (its ttl
  // is set to the gateway's).
  if (params && !(params->contains("task") && params->at("task").is_object()))
    (*params)["task"] = bj::object();
  // The server's requests of the task wait here for tasks/update (the client's capabilities
  // decide which it may be asked; inputResponses the request carried answer them at once).
  auto asks = std::make_shared<Conversation>(gateway_.io(), session, false, r.envelope,
                                             std::move(provided), false);
  // Named arguments only: GCC 12 mishandles temporaries in a co_await expression.
  std::string owner = session->owner;
  std::string id = r.id;
  std::string text = bj::serialize(msg);
  // On a per_session server's instance bound to the client's session (no trajectory named), the
  // session is kept from ending idle while the task runs: the instance ends with it.
  const bj::value* name = r.params.if_contains("name");
  const bool bound = r.trajectory.empty() && name && name->is_string() &&
                     server_tasks_.per_session(name->as_string());
  std::shared_ptr<gateway::Session> holder = bound ? session : nullptr;
  ServerTasks::Started started = co_await server_tasks_.start(
      std::move(session), std::move(owner), std::move(id), std::move(text), std::move(asks), false);
  if (holder && !started.task_id.empty()) server_tasks_.keep_busy(started.task_id, holder);
  if (!started.task_id.empty()) {
    // The extension's immediate-result shortcut, as for any task tool: a task that ends within
    // the window answers as the call did.
    co_await server_tasks_.wait_end(started.task_id, kTaskWindow);
    const tasks::Task* done = tasks_.by_id(started.task_id);
    if (done && done->status == tasks::Status::kCompleted) {
      co_await reply(ex, with_result_type(json::make_result(r.id, done->result)));
      co_return;
    }
    if (done && done->status == tasks::Status::kFailed) {
      co_await reply(ex, "{\"jsonrpc\":\"2.0\",\"id\":" + r.id + ",\"error\":" + done->error + "}");
      co_return;
    }
  }
  if (started.task_id.empty()) {  // an error, or the server's immediate result
    co_await reply(ex, with_result_type(std::move(started.response)));
    co_return;
  }
  const tasks::Task* t = tasks_.by_id(started.task_id);
  if (!t) {
    const std::string why = unknown_task_message(started.task_id);
    co_await reply(ex, error_response(r.id, json::kInvalidParams, why));
    co_return;
  }
  co_await reply(ex, json::make_result(r.id, R"({"resultType":"task",)" +
                                                 task_members(*t, tasks_.limits().ttl) + "}"));
}

asio::awaitable<void> McpStateless::run_task(std::shared_ptr<gateway::PostStream> stream,
                                             std::string id) {
  auto* conv = dynamic_cast<Conversation*>(stream.get());
  for (;;) {
    const tasks::Task* t = tasks_.by_id(id);
    if (!t || tasks::is_terminal(t->status)) break;
    if (!stream->responses.empty()) {
      const std::string response = std::move(stream->responses.front());
      stream->responses.clear();
      const json::Envelope env = json::parse_envelope(response);
      if (!env.error.empty()) {
        tasks_.fail(id, std::string(env.error.in(response)));
      } else {
        tasks_.complete(id, std::string(env.result.in(response)));
      }
      break;
    }
    if (stream->finished()) {
      tasks_.fail(id, R"({"code":-32603,"message":"the call ended without an answer"})");
      break;
    }
    if (conv && conv->has_asks()) {
      // Requests sent together are asked together.
      base::Timer gather(gateway_.io(), gateway_.clock(), kGatherWindow);
      boost::system::error_code ec;
      co_await gather.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (conv->has_asks()) tasks_.input_required(id, conv->pending_requests());
      continue;
    }
    // SEP-2663 sends no progress of a task to its client; the latest is its statusMessage.
    while (!stream->channel.queue.empty()) {
      if (std::string text = progress_text(stream->channel.pop()); !text.empty())
        tasks_.progress(id, std::move(text));
    }
    stream->channel.wake(gateway_.clock()).expires_after(kIdleWake);
    boost::system::error_code ec;
    co_await stream->channel.wake(gateway_.clock())
        .async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  stream->channel.close();  // nothing more of this call goes anywhere
}

void McpStateless::task_changed(const tasks::Task& t) {
  auto [it, end] = task_listeners_.equal_range(t.id);
  if (it != end) {
    const std::string members = detailed_members(t, tasks_.limits().ttl);
    for (auto at = it; at != end; ++at) {
      if (auto channel = at->second.channel.lock(); channel && !channel->closed) {
        channel->push(json::make_notification(
            "notifications/tasks", "{" + members + R"(,"_meta":)" + at->second.meta + "}"));
      }
    }
    // A finished task changes no more.
    if (tasks::is_terminal(t.status)) task_listeners_.erase(it, end);
  }
  if (on_task_change) on_task_change(t);
}

std::optional<std::vector<std::string>> McpStateless::follow_tasks(
    Exchange& ex, Request& r, const std::shared_ptr<gateway::Channel>& channel,
    const std::string& meta) {
  std::vector<std::string> agreed;
  const bj::value* filter = r.params.if_contains("notifications");
  const bj::value* ids =
      filter && filter->is_object() ? filter->as_object().if_contains("taskIds") : nullptr;
  if (!ids || !ids->is_array()) return agreed;
  if (!negotiates_tasks(r.envelope)) return std::nullopt;
  const base::Expected<std::string> owner = owner_of(ex);
  // Listeners of tasks that vanished without a status change (expired while running) go first.
  std::erase_if(task_listeners_, [this](const auto& kv) {
    return kv.second.channel.expired() || !tasks_.by_id(kv.first);
  });
  for (const bj::value& id : ids->as_array()) {
    if (!id.is_string() || !owner || agreed.size() >= tasks_.limits().max_per_owner) continue;
    const tasks::Task* t = tasks_.find(id.as_string(), *owner);
    if (!t) continue;  // not this client's, or gone: not agreed
    agreed.emplace_back(id.as_string());
    if (tasks::is_terminal(t->status)) {  // it will not change again: its end, at once
      channel->push(json::make_notification(
          "notifications/tasks",
          "{" + detailed_members(*t, tasks_.limits().ttl) + R"(,"_meta":)" + meta + "}"));
    } else {
      task_listeners_.emplace(t->id, TaskListener{channel, meta});
    }
  }
  return agreed;
}

asio::awaitable<tasks::Task*> McpStateless::task_of(Exchange& ex, Request& r) {
  if (!negotiates_tasks(r.envelope)) {
    const std::string why = r.method + " needs the " + std::string(kTasksExtension) +
                            " extension declared in clientCapabilities";
    const std::string data =
        R"({"requiredCapabilities":{"extensions":{")" + std::string(kTasksExtension) + R"(":{}}}})";
    co_await reply(ex, error_response(r.id, mcp::kMissingClientCapability, why, data));
    co_return nullptr;
  }
  const bj::value* given = r.params.if_contains("taskId");
  if (!given || !given->is_string()) {
    co_await reply(ex, error_response(r.id, json::kInvalidParams, "taskId must be a string"));
    co_return nullptr;
  }
  const base::Expected<std::string> owner = owner_of(ex);
  tasks::Task* task = !owner ? nullptr : tasks_.find(given->as_string(), *owner);
  if (!task) {
    const std::string why = unknown_task_message(given->as_string());
    co_await reply(ex, error_response(r.id, json::kInvalidParams, why));
    co_return nullptr;
  }
  co_return task;
}

asio::awaitable<void> McpStateless::task_get(Exchange& ex, Request& r) {
  tasks::Task* t = co_await task_of(ex, r);
  if (!t) co_return;
  if (ServerTasks::holds(*t)) {
    // A server's own running task is asked of the instance that holds it first.
    std::string id = t->id;
    co_await server_tasks_.refresh(id);
    t = tasks_.by_id(id);
    if (!t) {
      co_await reply(ex, error_response(r.id, json::kInvalidParams, unknown_task_message(id)));
      co_return;
    }
  }
  const std::string members = detailed_members(*t, tasks_.limits().ttl);
  co_await reply(ex, json::make_result(r.id, R"({"resultType":"complete",)" + members + "}"));
}

asio::awaitable<void> McpStateless::task_update(Exchange& ex, Request& r) {
  tasks::Task* t = co_await task_of(ex, r);
  if (!t) co_return;
  const bj::value* given = r.params.if_contains("inputResponses");
  if (!given || !given->is_object()) {
    co_await reply(ex, error_response(r.id, json::kInvalidParams,
                                      "inputResponses must be an object keyed as the task's "
                                      "inputRequests are"));
    co_return;
  }
  tasks_.provide(*t, given->as_object());
  co_await reply(ex, json::make_result(r.id, R"({"resultType":"complete"})"));
}

asio::awaitable<void> McpStateless::task_cancel(Exchange& ex, Request& r) {
  tasks::Task* t = co_await task_of(ex, r);
  if (!t) co_return;
  // A server's own task is cancelled on its instance first; a server that refuses (it had just
  // ended the task) changes nothing of the ack: the follower brings the end.
  std::string id = t->id;
  std::string why = "the agent cancelled the task (tasks/cancel)";
  const base::Status cancelled = co_await server_tasks_.cancel(std::move(id), std::move(why));
  static_cast<void>(cancelled);
  co_await reply(ex, json::make_result(r.id, R"({"resultType":"complete"})"));
}

}  // namespace toolbridge::frontend
