#include "frontend/mcp_session_tasks.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <functional>
#include <utility>
#include <vector>

#include "config/config.h"
#include "frontend/server_tasks.h"
#include "gateway/methods.h"
#include "json/parse.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace bj = boost::json;
namespace http = boost::beast::http;
using transport::Exchange;

std::string with_related_task(std::string_view params, const std::string& task_id) {
  boost::system::error_code ec;
  bj::value p = json::parse(params.empty() ? std::string_view("{}") : params, ec);
  if (ec || !p.is_object()) return std::string(params);
  bj::value& meta = p.as_object()["_meta"];
  if (!meta.is_object()) meta = bj::object();
  meta.as_object()[kRelatedTask] = bj::object{{"taskId", task_id}};
  return bj::serialize(p);
}

namespace {

// A session's call run as a task: its messages go to the session's stream (the POST that
// started it was answered at once), each tied to the task; its progress stops when the task
// ends (the follower closes the channel).
class TaskStream final : public gateway::PostStream {
 public:
  using PostStream::PostStream;
  void on_notification(std::string message) override {
    if (channel.closed || task_id.empty()) return;
    const json::Envelope env = json::parse_envelope(message);
    PostStream::on_notification(
        json::make_notification(env.method, with_related_task(env.params.in(message), task_id)));
  }
  // The task is input_required while any request of its call waits for the client's answer.
  void on_server_request(const std::string& method, std::string params, Reply reply) override {
    auto pending = std::make_shared<bool>(true);
    ++asking_;
    std::weak_ptr<TaskStream> weak = std::static_pointer_cast<TaskStream>(shared_from_this());
    Reply answered = [weak, pending, reply = std::move(reply)](bool is_error, std::string raw) {
      reply(is_error, std::move(raw));
      if (!std::exchange(*pending, false)) return;
      if (auto self = weak.lock()) self->answered();
    };
    PostStream::on_server_request(method, with_related_task(params, task_id), std::move(answered));
    if (*pending && asking_ == 1 && on_asking) on_asking(true);
  }
  std::string task_id;
  // Told when the call starts waiting for the client (true) and when nothing waits any more.
  std::function<void(bool)> on_asking;

 private:
  void answered() {
    if (--asking_ == 0 && on_asking) on_asking(false);
  }
  std::size_t asking_ = 0;
};

// Whether a call of `tool` runs on an instance bound to this session itself (a per_session
// server, the session naming no trajectory): such a call cannot outlive the session.
bool runs_on_session_instance(gateway::Gateway& gateway, const gateway::Session& session,
                              const std::string& tool) {
  if (!session.trajectory.empty()) return false;
  const catalog::Entry* entry = gateway.catalog().tool(tool);
  if (!entry) return false;
  for (const auto& server : gateway.config().servers) {
    if (server.name == entry->server) return server.policy == config::Policy::kPerSession;
  }
  return false;
}

// Takes the call `stream` runs out of the session's calls, so that the session's end does not
// cancel it; returns it (null if it is not running, e.g. already answered).
std::weak_ptr<call::Call> take_out_of_session(gateway::Session& session,
                                              const std::shared_ptr<gateway::PostStream>& s) {
  for (auto it = session.in_flight.begin(); it != session.in_flight.end(); ++it) {
    if (it->second.stream.lock() != s) continue;
    std::weak_ptr<call::Call> call = it->second.call;
    session.in_flight.erase(it);
    return call;
  }
  return {};
}

// A tool result with isError is a failed task in this revision (SEP-1686).
bool is_tool_error(const std::string& result) {
  boost::system::error_code ec;
  const bj::value r = json::parse(result, ec);
  const bj::value* e = !ec && r.is_object() ? r.as_object().if_contains("isError") : nullptr;
  return e && e->is_bool() && e->as_bool();
}

}  // namespace

std::string task_json(const tasks::Task& t, std::chrono::milliseconds ttl) {
  std::string_view status = tasks::to_string(t.status);
  if (t.status == tasks::Status::kCompleted && is_tool_error(t.result)) status = "failed";
  std::string out =
      R"({"taskId":)" + json::quote(t.id) + R"(,"status":")" + std::string(status) + '"';
  if (!t.status_message.empty()) out += R"(,"statusMessage":)" + json::quote(t.status_message);
  return out + R"(,"createdAt":")" + tasks::iso8601(t.created) + R"(","lastUpdatedAt":")" +
         tasks::iso8601(t.updated) + R"(","ttl":)" + std::to_string(ttl.count()) +
         R"(,"pollInterval":)" + std::to_string(kTaskPollIntervalMs) + "}";
}

SessionTasks::SessionTasks(gateway::Gateway& gateway, McpStateless& stateless)
    : gateway_(gateway), stateless_(stateless) {
  stateless_.on_task_change = [this](const tasks::Task& t) { changed(t); };
  follow_server_tasks();
}

bool SessionTasks::claims(const gateway::Session& session, const json::Envelope& env,
                          std::string_view message) {
  if (env.kind != json::Kind::kRequest || session.version < mcp::Version::k2025_11_25) return false;
  if (env.method.starts_with("tasks/")) return true;
  if (env.method != "tools/call") return false;
  const std::string_view params = env.params.in(message);
  // Most calls: no "task" anywhere in their params (and no escape that could spell it), so no
  // member scan (it allocates) for every call of a session.
  if (params.find("\"task\"") == std::string_view::npos &&
      params.find('\\') == std::string_view::npos)
    return false;
  const auto members = json::object_members(params);
  if (!members) return false;
  for (const auto& m : *members) {
    if (m.name == "task") return true;
  }
  return false;
}

asio::awaitable<void> SessionTasks::handle(Exchange& ex, std::shared_ptr<gateway::Session> session,
                                           const transport::Headers& headers) {
  Request r;
  r.text = ex.request().body();
  const json::Envelope env = json::parse_envelope(r.text);
  r.id = std::string(env.id.in(r.text));
  r.method = std::string(env.method);
  r.session = std::move(session);
  std::string body;
  if (r.method == "tools/call") {
    // A tool whose server has tasks of its own runs as the server's task.
    const json::Envelope call_env = json::parse_envelope(r.text);
    std::string tool;
    if (const auto members = json::object_members(call_env.params.in(r.text))) {
      for (const auto& m : *members) {
        if (m.name != "name") continue;
        boost::system::error_code ec;
        const bj::value v = json::parse(m.value.in(call_env.params.in(r.text)), ec);
        if (!ec && v.is_string()) tool = std::string(v.as_string());
      }
    }
    if (!tool.empty() && stateless_.server_tasks().server_for(tool)) {
      body = co_await pass_call(r);
    } else {
      body = call(r);
    }
  } else if (r.method == "tasks/list") {
    body = list(r);
  } else if (r.method == "tasks/get" || r.method == "tasks/cancel" || r.method == "tasks/result") {
    base::Expected<tasks::Task*> found = task_of(r);
    if (!found) body = found.error();
    tasks::Task* t = found ? *found : nullptr;
    if (t && r.method != "tasks/result") {
      // A running task of a server's own is asked of its instance first.
      // (Named arguments and no co_await inside ?: — GCC 12 mishandles coroutine temporaries.)
      std::string task_id = t->id;
      if (r.method == "tasks/get") {
        body = co_await pass_get(r, std::move(task_id));
      } else {
        body = co_await pass_cancel(r, std::move(task_id));
      }
      if (body.empty()) found = task_of(r);  // not a server's task: the store answers
      if (body.empty() && !found) body = found.error();
      t = body.empty() ? *found : nullptr;
    }
    if (t && r.method == "tasks/get") body = get(r, *t);
    if (t && r.method == "tasks/cancel") body = cancel(r, *t);
    if (t && r.method == "tasks/result") {
      std::string task_id = t->id;  // a named local: t may not outlive the wait
      body = co_await result(ex, r, std::move(task_id));
    }
  } else {
    body = json::make_error(r.id, json::kMethodNotFound, "Method not found: " + r.method);
  }
  if (body.empty()) co_return;  // the client left while waiting
  co_await ex.reply(http::status::ok, "application/json", std::move(body), headers);
}

std::string SessionTasks::call(const Request& r) {
  boost::system::error_code ec;
  bj::value msg = json::parse(r.text, ec);
  bj::object* params = ec ? nullptr : params_of(msg);
  const bj::value* task = params ? params->if_contains("task") : nullptr;
  const bj::value* name = params ? params->if_contains("name") : nullptr;
  if (!task || !task->is_object() || !name || !name->is_string()) {
    return json::make_error(r.id, json::kInvalidParams,
                            "a task-augmented tools/call needs params.name (a string) and "
                            "params.task (an object)");
  }
  const std::string tool(name->as_string());
  if (stateless_.task_support(tool).empty()) {
    return json::make_error(r.id, json::kMethodNotFound,
                            "tool '" + tool +
                                "' does not run as a task (its server marks no "
                                "execution.taskSupport and its task_tools do not name it)");
  }
  // The gateway runs the task; the server gets an ordinary call.
  params->erase("task");
  const std::string text = bj::serialize(msg);
  auto stream = std::make_shared<TaskStream>(gateway_.io(), r.session, false);
  gateway_.methods().handle(r.session, stream, text);
  // A task outlives its session (DELETE, idle end) unless its call runs on the session's own
  // instance, which ends with it.
  const bool bound = runs_on_session_instance(gateway_, *r.session, tool);
  std::weak_ptr<call::Call> detached;
  if (!bound) detached = take_out_of_session(*r.session, stream);
  base::Expected<tasks::Task*> adopted =
      stateless_.adopt(stream, r.session, r.session->owner, detached);
  if (!adopted) return json::make_error(r.id, json::kOverloaded, adopted.error());
  tasks::Task* t = *adopted;
  stream->task_id = t->id;
  stream->on_asking = [this, id = t->id](bool asking) {
    if (asking) {
      stateless_.task_store().input_required(id, "{}");
    } else {
      stateless_.task_store().working(id);
    }
  };
  if (creators_.size() >= 4096) {  // tasks forgotten at their TTL while running
    std::erase_if(creators_,
                  [this](const auto& kv) { return !stateless_.task_store().by_id(kv.first); });
  }
  creators_[t->id] = Creator{r.session, r.session->id(), r.id, bound};
  return json::make_result(
      r.id, R"({"task":)" + task_json(*t, stateless_.task_store().limits().ttl) + "}");
}

base::Expected<tasks::Task*> SessionTasks::task_of(const Request& r) {
  boost::system::error_code ec;
  bj::value msg = json::parse(r.text, ec);
  const bj::object* params = ec ? nullptr : params_of(msg);
  const bj::value* id = params ? params->if_contains("taskId") : nullptr;
  if (!id || !id->is_string())
    return base::fail(json::make_error(r.id, json::kInvalidParams, "taskId must be a string"));
  tasks::Task* t = stateless_.task_store().find(id->as_string(), r.session->owner);
  if (!t) {
    return base::fail(
        json::make_error(r.id, json::kInvalidParams, unknown_task_message(id->as_string())));
  }
  return t;
}

std::string SessionTasks::get(const Request& r, tasks::Task& t) {
  return json::make_result(r.id, task_json(t, stateless_.task_store().limits().ttl));
}

std::string SessionTasks::cancel(const Request& r, tasks::Task& t) {
  if (tasks::is_terminal(t.status)) {
    return json::make_error(r.id, json::kInvalidParams,
                            "Cannot cancel task: already in terminal status '" +
                                std::string(tasks::to_string(t.status)) + "'");
  }
  stateless_.task_store().cancel(t, "the agent cancelled the task (tasks/cancel)");
  return json::make_result(r.id, task_json(t, stateless_.task_store().limits().ttl));
}

std::string SessionTasks::list(const Request& r) {
  std::string out = R"({"tasks":[)";
  bool first = true;
  for (const tasks::Task* t : stateless_.task_store().of_owner(r.session->owner)) {
    if (!first) out += ',';
    first = false;
    out += task_json(*t, stateless_.task_store().limits().ttl);
  }
  return json::make_result(r.id, out + "]}");
}

asio::awaitable<std::string> SessionTasks::result(Exchange& ex, const Request& r,
                                                  std::string task_id) {
  // Shared with the peer-closed callback, which may run after this coroutine has ended.
  struct Wait {
    explicit Wait(gateway::Gateway& g) : wake(g.io(), g.clock()) {}
    base::Timer wake;
    bool left = false;
  };
  auto wait = std::make_shared<Wait>(gateway_);
  const auto waiter = waiters_.emplace(task_id, &wait->wake);
  ex.on_peer_closed([weak = std::weak_ptr<Wait>(wait)] {
    if (auto w = weak.lock()) {
      w->left = true;
      w->wake.cancel();
    }
  });
  tasks::Task* t = nullptr;
  for (;;) {
    t = stateless_.task_store().find(task_id, r.session->owner);
    if (!t || tasks::is_terminal(t->status) || wait->left) break;
    wait->wake.expires_at(t->expires);  // a task is forgotten at its TTL at the latest
    boost::system::error_code ec;
    co_await wait->wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  waiters_.erase(waiter);
  if (wait->left) co_return std::string();
  if (!t) {
    co_return json::make_error(r.id, json::kInvalidParams,
                               "task '" + task_id + "' expired (gateway.task_ttl)");
  }
  if (t->status == tasks::Status::kCompleted) {
    co_return json::make_result(r.id, with_related_task(t->result, t->id));
  }
  if (t->status == tasks::Status::kFailed) {
    co_return "{\"jsonrpc\":\"2.0\",\"id\":" + r.id + ",\"error\":" + t->error + "}";
  }
  co_return json::make_error(r.id, json::kInternalError,
                             "task '" + t->id + "' was cancelled before it ended");
}

void SessionTasks::changed(const tasks::Task& t) {
  if (tasks::is_terminal(t.status)) {
    for (auto [it, end] = waiters_.equal_range(t.id); it != end; ++it) it->second->cancel();
  }
  auto creator = creators_.find(t.id);
  if (creator == creators_.end()) return;
  if (auto session = creator->second.session.lock()) {
    const std::string params = task_json(t, stateless_.task_store().limits().ttl);
    session->push_unsolicited(json::make_notification("notifications/tasks/status", params));
  }
  if (tasks::is_terminal(t.status)) creators_.erase(creator);
}

bool SessionTasks::cancels_task(const gateway::Session& session, const json::Envelope& env,
                                std::string_view message) {
  if (env.kind != json::Kind::kNotification || env.method != "notifications/cancelled" ||
      creators_.empty()) {
    return false;
  }
  boost::system::error_code ec;
  const bj::value p = json::parse(env.params.in(message), ec);
  const bj::value* rid = !ec && p.is_object() ? p.as_object().if_contains("requestId") : nullptr;
  if (!rid) return false;
  const std::string request_id = bj::serialize(*rid);
  for (const auto& [task_id, c] : creators_) {
    if (c.session_id != session.id() || c.request_id != request_id) continue;
    tasks::Task* t = stateless_.task_store().find(task_id, session.owner);
    if (!t) return false;
    const bj::value* reason = p.as_object().if_contains("reason");
    std::string why = reason && reason->is_string() ? std::string(reason->as_string()) : "";
    if (why.empty() || why.size() > 512) why = "the agent cancelled the task's request";
    stateless_.task_store().cancel(*t, why);  // changed() may erase c: nothing of it is used after
    return true;
  }
  return false;
}

void SessionTasks::ending(const gateway::Session& session) {
  std::vector<std::string> ids;
  for (const auto& [task_id, c] : creators_) {
    if (c.bound && c.session_id == session.id()) ids.push_back(task_id);
  }
  for (const auto& id : ids) {
    if (tasks::Task* t = stateless_.task_store().by_id(id))
      stateless_.task_store().cancel(*t,
                                     "the agent ended the session whose instance runs the task");
  }
}

}  // namespace toolbridge::frontend
