// A server's own tasks for sessions of 2025-11-25 (docs/tasks.md): the wire of that revision over
// ServerTasks (server_tasks.cpp), which sends the call, follows the server's task and keeps the
// mapping of the gateway's id to the server's. The server's requests of the task go to the
// creating session's stream, its status notifications reach that session with the gateway's id.
#include <boost/json.hpp>

#include "frontend/mcp_session_tasks.h"
#include "frontend/server_tasks.h"
#include "json/parse.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace bj = boost::json;

void SessionTasks::follow_server_tasks() {
  ServerTasks& server = stateless_.server_tasks();
  server.on_session_request = [this](const std::string& task_id, const std::string& method,
                                     std::string params, upstream::CallSink::Reply reply) {
    std::shared_ptr<gateway::Session> session;
    if (auto c = creators_.find(task_id); c != creators_.end()) session = c->second.session.lock();
    if (!session) {
      reply(true, R"({"code":-32603,"message":"the session that started this task has ended"})");
      return;
    }
    gateway::PostStream stream(gateway_.io(), session, false);
    stream.detached = true;  // to the session's GET stream
    stream.on_server_request(method, std::move(params), std::move(reply));
  };
  server.on_relay = [this](const tasks::Task& t) {
    auto creator = creators_.find(t.id);
    if (creator == creators_.end()) return;
    if (auto session = creator->second.session.lock()) {
      session->push_unsolicited(json::make_notification(
          "notifications/tasks/status", task_json(t, stateless_.task_store().limits().ttl)));
    }
  };
}

asio::awaitable<std::string> SessionTasks::pass_call(const Request& r) {
  tasks::Store& store = stateless_.task_store();
  // Named arguments only: GCC 12 mishandles temporaries in a co_await expression.
  std::shared_ptr<gateway::Session> session = r.session;
  std::string owner = session->owner;
  std::string id = r.id;
  std::string text = r.text;
  ServerTasks::Started started = co_await stateless_.server_tasks().start(
      std::move(session), std::move(owner), std::move(id), std::move(text), nullptr, true);
  if (started.task_id.empty()) co_return started.response;
  if (creators_.size() >= 4096) {  // tasks forgotten at their TTL while running
    std::erase_if(creators_, [&store](const auto& kv) { return !store.by_id(kv.first); });
  }
  tasks::Task* t = store.by_id(started.task_id);
  if (t && !tasks::is_terminal(t->status)) {
    // On a per_session server's instance bound to the session itself, the task ends with the
    // session (DELETE: ending()), and keeps it from ending idle meanwhile.
    const bool bound = runs_on_own_instance(r);
    creators_[t->id] = Creator{r.session, r.session->id(), r.id, bound};
    if (bound) stateless_.server_tasks().keep_busy(t->id, r.session);
  }
  if (!t) {
    co_return json::make_error(r.id, json::kInvalidParams, unknown_task_message(started.task_id));
  }
  co_return json::make_result(r.id, R"({"task":)" + task_json(*t, store.limits().ttl) + "}");
}

bool SessionTasks::runs_on_own_instance(const Request& r) const {
  if (!r.session->trajectory.empty()) return false;  // the trajectory's instance outlives it
  boost::system::error_code ec;
  bj::value msg = json::parse(r.text, ec);
  const bj::object* params = ec ? nullptr : params_of(msg);
  const bj::value* name = params ? params->if_contains("name") : nullptr;
  return name && name->is_string() && stateless_.server_tasks().per_session(name->as_string());
}

asio::awaitable<std::string> SessionTasks::pass_get(const Request&, std::string task_id) {
  co_await stateless_.server_tasks().refresh(task_id);
  co_return std::string();  // the store's task, as the server's answer left it
}

asio::awaitable<std::string> SessionTasks::pass_cancel(const Request& r, std::string task_id) {
  tasks::Store& store = stateless_.task_store();
  tasks::Task* t = store.find(task_id, r.session->owner);
  if (!t || !ServerTasks::holds(*t)) co_return std::string();  // cancel() answers
  std::string why = "the agent cancelled the task (tasks/cancel)";
  const base::Status cancelled = co_await stateless_.server_tasks().cancel(task_id, std::move(why));
  // The server refused (it had just ended the task): its answer; the follower brings the end.
  if (!cancelled.ok())
    co_return "{\"jsonrpc\":\"2.0\",\"id\":" + r.id + ",\"error\":" + cancelled.error() + "}";
  t = store.find(task_id, r.session->owner);
  if (!t) co_return json::make_error(r.id, json::kInvalidParams, unknown_task_message(task_id));
  if (t->status != tasks::Status::kCancelled) co_return std::string();  // it ended first
  co_return json::make_result(r.id, task_json(*t, store.limits().ttl));
}

}  // namespace toolbridge::frontend
