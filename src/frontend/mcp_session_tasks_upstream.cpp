// A server's own tasks, passed through for sessions of 2025-11-25 (docs/tasks.md). A tool whose
// server declares tasks.requests.tools.call and marks the tool with execution.taskSupport runs as
// that server's task: the task-augmented tools/call goes through the pipeline once (never retried,
// cached or replayed), and the server's CreateTaskResult becomes a gateway task whose unguessable,
// tenant-scoped id maps to (server, instance, the server's task id). The server's id never reaches
// a client. A follower keeps the server's tasks/result pending on that instance until the task
// ends: it brings the result (or the instance's death) into the store, and routes what the server
// says of the task meanwhile (notifications/tasks/status, requests with its related-task _meta).
// The pending request also holds the instance: a pool does not retire or recycle an instance with
// a call in flight, so it is kept until its tasks end (the request's timeout is the task's TTL).
#include <fmt/format.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <exception>

#include "config/config.h"
#include "frontend/mcp_session_tasks.h"
#include "gateway/methods.h"
#include "json/parse.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace bj = boost::json;

namespace {

// A server's task id this long or longer is refused: the gateway keeps and sends it.
constexpr std::size_t kMaxUpstreamTaskId = 256;

// A server's own task, as the store drives it.
class UpstreamRun final : public tasks::Run {
 public:
  std::weak_ptr<upstream::Instance> instance;
  std::string upstream_id;               // the server's task id
  std::string display;                   // "server__tool", for messages
  std::chrono::milliseconds timeout{0};  // for tasks/get and tasks/cancel asked of the server
  bool cancel_supported = false;         // the server declares tasks.cancel
  bool told = false;                     // tasks/cancel has been sent already
  std::shared_ptr<upstream::CallSink> follower;

  // The store cancelled the task (tasks/cancel, its TTL, the gateway stopping): the server is
  // told, and the follower stops waiting.
  void cancel(const std::string& why) override {
    auto inst = instance.lock();
    if (!inst) return;
    if (cancel_supported && !std::exchange(told, true)) {
      inst->call("tasks/cancel", R"({"taskId":)" + json::quote(upstream_id) + "}", "0", {},
                 std::make_shared<Ignore>(), timeout, display);
    }
    if (follower) inst->cancel(follower, "0", why);
  }
  std::string provide(const bj::object&) override { return {}; }  // sessions answer requests

  // The answer to a request nobody waits for (tasks/cancel sent on a cancel).
  class Ignore final : public upstream::CallSink {
   public:
    void on_response(std::string) override {}
    void on_failure(upstream::Failure, std::string_view, std::string) override {}
    void on_notification(std::string) override {}
    void on_server_request(const std::string&, std::string, Reply reply) override {
      reply(true, R"({"code":-32601,"message":"not expected here"})");
    }
  };
};

UpstreamRun* upstream_run(const tasks::Task& t) {
  return t.run ? dynamic_cast<UpstreamRun*>(t.run.get()) : nullptr;
}

// One request to an instance, awaited: its whole JSON-RPC response, or empty with `failure` set.
class Ask final : public upstream::CallSink {
 public:
  Ask(asio::io_context& io, const base::Clock& clock) : wake(io, clock) {}
  void on_response(std::string message) override {
    response = std::move(message);
    done = true;
    wake.cancel();
  }
  void on_failure(upstream::Failure, std::string_view, std::string detail) override {
    failure = std::move(detail);
    done = true;
    wake.cancel();
  }
  void on_notification(std::string) override {}
  void on_server_request(const std::string&, std::string, Reply reply) override {
    reply(true, R"({"code":-32601,"message":"not expected here"})");
  }
  base::Timer wake;
  bool done = false;
  std::string response;
  std::string failure;
};

asio::awaitable<std::shared_ptr<Ask>> ask(gateway::Gateway& gateway, upstream::Instance& inst,
                                          const std::string& method, std::string params,
                                          std::chrono::milliseconds timeout,
                                          const std::string& display) {
  auto a = std::make_shared<Ask>(gateway.io(), gateway.clock());
  inst.call(method, std::move(params), "0", {}, a, timeout, display);
  if (!a->done) {
    // The instance answers every call by its deadline (a timeout is a failure), or fails it.
    a->wake.expires_after(timeout + std::chrono::seconds(1));
    boost::system::error_code ec;
    co_await a->wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  co_return a;
}

// The result object of a JSON-RPC response, or null.
bj::value result_of(const std::string& response) {
  const json::Envelope env = json::parse_envelope(response);
  if (env.kind != json::Kind::kResponse || env.result.empty()) return nullptr;
  boost::system::error_code ec;
  bj::value v = json::parse(env.result.in(response), ec);
  return ec || !v.is_object() ? bj::value(nullptr) : v;
}

std::string gateway_error(std::string_view message) {
  return R"({"code":-32603,"message":)" + json::quote(message) + "}";
}

}  // namespace

// Follows a server's task to its end: the server's tasks/result, pending on the instance that
// holds the task.
class UpstreamFollower final : public upstream::CallSink {
 public:
  UpstreamFollower(SessionTasks& owner, std::string task_id, std::string display)
      : owner_(owner),
        alive_(owner.alive_),
        task_id_(std::move(task_id)),
        display_(std::move(display)) {}

  void on_response(std::string message) override {
    if (alive_.expired()) return;
    tasks::Store& store = owner_.stateless_.task_store();
    const json::Envelope env = json::parse_envelope(message);
    tasks::Task* t = store.by_id(task_id_);
    UpstreamRun* run = t ? upstream_run(*t) : nullptr;
    if (!env.error.empty() && run && run->told) {
      // The server ended it on the gateway's tasks/cancel (its answer may come after this).
      store.cancel(*t, "the agent cancelled the task (tasks/cancel)");
    } else if (!env.error.empty()) {
      store.fail(task_id_, std::string(env.error.in(message)));
    } else if (!env.result.empty()) {
      // The server's related-task _meta names its own id: the client knows the gateway's.
      store.complete(task_id_, with_related_task(env.result.in(message), task_id_));
    } else {
      store.fail(task_id_, gateway_error(display_ + ": the server's tasks/result had no result"));
    }
  }
  void on_failure(upstream::Failure failure, std::string_view, std::string detail) override {
    if (alive_.expired()) return;
    std::string why;
    switch (failure) {
      case upstream::Failure::kCrashed:
      case upstream::Failure::kNotSent:
      case upstream::Failure::kUnavailable:
        why = "the server's instance that held this task is gone, and its task with it (" + detail +
              ")";
        break;
      case upstream::Failure::kTimeout:
        why = "the task outlived gateway.task_ttl (" + detail + ")";
        break;
      case upstream::Failure::kOverloaded:
        why = "the gateway could not follow the server's task (" + detail + ")";
        break;
    }
    tasks::Store& store = owner_.stateless_.task_store();
    tasks::Task* t = store.by_id(task_id_);
    UpstreamRun* run = t ? upstream_run(*t) : nullptr;
    if (run && failure == upstream::Failure::kOverloaded) run->cancel(why);  // not left running
    store.fail(task_id_, gateway_error(why));
  }
  void on_notification(std::string message) override {
    if (alive_.expired()) return;
    const json::Envelope env = json::parse_envelope(message);
    if (env.method != "notifications/tasks/status") return;
    boost::system::error_code ec;
    const bj::value p = json::parse(env.params.in(message), ec);
    if (!ec && p.is_object()) owner_.server_status(task_id_, p.as_object(), true);
  }
  // The server asks the client something for its task: to the creating session's stream, tied
  // to the gateway's task (the server's status notifications say input_required meanwhile).
  void on_server_request(const std::string& method, std::string params, Reply reply) override {
    std::shared_ptr<gateway::Session> session;
    if (!alive_.expired()) {
      if (auto c = owner_.creators_.find(task_id_); c != owner_.creators_.end())
        session = c->second.session.lock();
    }
    if (!session) {
      reply(true, gateway_error("the session that started this task has ended"));
      return;
    }
    gateway::PostStream stream(owner_.gateway_.io(), session, false);
    stream.detached = true;  // to the session's GET stream
    stream.on_server_request(method, with_related_task(params, task_id_), std::move(reply));
  }

 private:
  SessionTasks& owner_;
  std::weak_ptr<bool> alive_;
  std::string task_id_;
  std::string display_;
};

std::shared_ptr<upstream::Upstream> SessionTasks::task_server(std::string_view tool) const {
  const catalog::Entry* entry = gateway_.catalog().tool(tool);
  if (!entry) return nullptr;
  auto up = gateway_.upstream(entry->server);
  if (!up || up->config().policy == config::Policy::kPerSession) return nullptr;
  auto inst = up->any_ready();
  if (!inst || !inst->capabilities().tasks_tools_call) return nullptr;
  // The server's own mark, not the one task_tools gives a tool of a server without tasks.
  const upstream::Catalog* lists = up->catalog();
  if (!lists) return nullptr;
  for (const bj::value& def : lists->tools) {
    const bj::object* o = def.if_object();
    const bj::value* name = o ? o->if_contains("name") : nullptr;
    if (!name || !name->is_string() || name->as_string() != entry->original) continue;
    const bj::value* exec = o->if_contains("execution");
    const bj::value* support =
        exec && exec->is_object() ? exec->as_object().if_contains("taskSupport") : nullptr;
    const bool marked = support && support->is_string() &&
                        (support->as_string() == "optional" || support->as_string() == "required");
    return marked ? up : nullptr;
  }
  return nullptr;
}

asio::awaitable<std::string> SessionTasks::pass_call(const Request& r) {
  tasks::Store& store = stateless_.task_store();
  const std::string owner = r.session->owner;
  // A task the gateway could not keep is not started on the server at all.
  if (base::Status room = store.room_for(owner); !room)
    co_return json::make_error(r.id, json::kOverloaded, room.error());
  boost::system::error_code ec;
  bj::value msg = json::parse(r.text, ec);
  bj::object* params = nullptr;
  if (!ec && msg.is_object()) {
    if (auto* p = msg.as_object().if_contains("params"); p && p->is_object())
      params = &p->as_object();
  }
  if (!params || !params->contains("task") || !(*params)["task"].is_object()) {
    co_return json::make_error(r.id, json::kInvalidParams,
                               "a task-augmented tools/call needs params.task (an object)");
  }
  // The server keeps the task as long as the gateway does.
  bj::object& task = (*params)["task"].as_object();
  task["ttl"] = store.limits().ttl.count();
  const std::string text = bj::serialize(msg);

  // Through the pipeline once: resolve, repair, authorize, admission, breaker, dispatch.
  auto stream = std::make_shared<gateway::PostStream>(gateway_.io(), r.session, false);
  std::shared_ptr<call::Call> call;
  gateway_.methods().handle(r.session, stream, json::parse_envelope(text), text, &call);
  if (!call) {  // answered at once (malformed, refused)
    co_return stream->responses.empty()
        ? json::make_error(r.id, json::kInternalError, "the call was not run")
        : stream->responses.front();
  }
  call->task_augmented = true;
  call::Result result;
  std::exception_ptr failure;
  try {
    result = co_await gateway_.pipeline().run(*call);
  } catch (...) {
    failure = std::current_exception();
  }
  const bool cancelled = call->cancelled();
  gateway::Methods::settle(r.session, *stream, *call, failure, std::move(result));
  if (cancelled || stream->responses.empty()) {
    co_return json::make_error(r.id, json::kInternalError,
                               "the call was cancelled before its server made the task");
  }
  const std::string response = stream->responses.front();
  const json::Envelope env = json::parse_envelope(response);
  if (!env.error.empty()) co_return response;  // no task was made: the error as it is
  const bj::value answer = result_of(response);
  const bj::value* made = answer.is_object() ? answer.as_object().if_contains("task") : nullptr;
  const bj::value* up_id =
      made && made->is_object() ? made->as_object().if_contains("taskId") : nullptr;
  std::shared_ptr<upstream::Instance> inst = call->instance.lock();
  if (!up_id || !up_id->is_string() || up_id->as_string().empty() ||
      up_id->as_string().size() >= kMaxUpstreamTaskId) {
    // The server answered at once (or the gateway failed the call as an isError result): a task
    // that has ended already, as the client asked for a task.
    base::Expected<tasks::Task*> created = store.create(owner, nullptr);
    if (!created) co_return json::make_error(r.id, json::kOverloaded, created.error());
    tasks::Task* t = *created;
    const std::string id = t->id;
    const bool tool_result = answer.is_object() && !answer.as_object().contains("task");
    if (tool_result) {
      store.complete(id, std::string(env.result.in(response)));
    } else {
      store.fail(id, gateway_error(call->route.display_name +
                                   ": the server's answer named no usable task id"));
    }
    t = store.by_id(id);
    co_return json::make_result(r.id, R"({"task":)" + task_json(*t, store.limits().ttl) + "}");
  }
  auto run = std::make_shared<UpstreamRun>();
  run->instance = inst;
  run->upstream_id = std::string(up_id->as_string());
  run->display = call->route.display_name;
  auto up = gateway_.upstream(call->route.server);
  run->timeout =
      up ? std::chrono::duration_cast<std::chrono::milliseconds>(up->config().call_timeout)
         : std::chrono::milliseconds(30'000);
  run->cancel_supported = inst && inst->capabilities().tasks_cancel;
  base::Expected<tasks::Task*> created = store.create(owner, run);
  if (!created) {
    run->cancel(created.error());  // made on the server, but not kept here: cancelled there
    co_return json::make_error(r.id, json::kOverloaded, created.error());
  }
  tasks::Task* t = *created;
  const std::string id = t->id;
  if (creators_.size() >= 4096) {  // tasks forgotten at their TTL while running
    std::erase_if(creators_, [&store](const auto& kv) { return !store.by_id(kv.first); });
  }
  creators_[id] = Creator{r.session, r.session->id(), r.id, false};
  if (!inst || inst->state() != upstream::Instance::State::kReady) {
    store.fail(id, gateway_error(run->display +
                                 ": the server's instance that made this task is gone, and its "
                                 "task with it"));
  } else {
    auto follower = std::make_shared<UpstreamFollower>(*this, id, run->display);
    run->follower = follower;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(t->expires - gateway_.clock().now());
    inst->call("tasks/result", R"({"taskId":)" + json::quote(run->upstream_id) + "}", "0", {},
               follower, std::max(left, std::chrono::milliseconds(1)), run->display);
  }
  t = store.by_id(id);
  if (!t) co_return json::make_error(r.id, json::kInvalidParams, unknown_task_message(id));
  co_return json::make_result(r.id, R"({"task":)" + task_json(*t, store.limits().ttl) + "}");
}

asio::awaitable<std::string> SessionTasks::pass_get(const Request& r, std::string task_id) {
  tasks::Store& store = stateless_.task_store();
  tasks::Task* t = store.find(task_id, r.session->owner);
  UpstreamRun* run = t ? upstream_run(*t) : nullptr;
  auto inst = run ? run->instance.lock() : nullptr;
  if (!inst) co_return std::string();
  // Named arguments only: GCC 12 mishandles temporaries in a co_await expression.
  const std::string display = run->display;
  const std::string method = "tasks/get";
  std::string params = R"({"taskId":)" + json::quote(run->upstream_id) + "}";
  const std::chrono::milliseconds timeout = run->timeout;
  std::shared_ptr<Ask> a =
      co_await ask(gateway_, *inst, method, std::move(params), timeout, display);
  if (const bj::value got = result_of(a->response); got.is_object())
    server_status(task_id, got.as_object(), false);
  co_return std::string();  // the store's task, as the server's answer left it
}

asio::awaitable<std::string> SessionTasks::pass_cancel(const Request& r, std::string task_id) {
  tasks::Store& store = stateless_.task_store();
  tasks::Task* t = store.find(task_id, r.session->owner);
  UpstreamRun* run = t ? upstream_run(*t) : nullptr;
  auto inst = run ? run->instance.lock() : nullptr;
  if (!inst || !run->cancel_supported) co_return std::string();  // the store cancels it
  run->told = true;
  const std::string display = run->display;
  const std::string method = "tasks/cancel";
  std::string params = R"({"taskId":)" + json::quote(run->upstream_id) + "}";
  const std::chrono::milliseconds timeout = run->timeout;
  std::shared_ptr<Ask> a =
      co_await ask(gateway_, *inst, method, std::move(params), timeout, display);
  const json::Envelope env = json::parse_envelope(a->response);
  if (!env.error.empty()) {
    // The server refused (it had just ended the task): its answer, and the follower brings the
    // end. An instance that is gone: the store cancels the task as it is.
    co_return "{\"jsonrpc\":\"2.0\",\"id\":" + r.id +
        ",\"error\":" + std::string(env.error.in(a->response)) + "}";
  }
  t = store.find(task_id, r.session->owner);
  if (!t) co_return json::make_error(r.id, json::kInvalidParams, unknown_task_message(task_id));
  // The follower may have seen the server end it already (its tasks/result answered first).
  store.cancel(*t, "the agent cancelled the task (tasks/cancel)");
  if (t->status != tasks::Status::kCancelled) co_return std::string();  // it ended first
  co_return json::make_result(r.id, task_json(*t, store.limits().ttl));
}

void SessionTasks::server_status(const std::string& task_id, const bj::object& task, bool relay) {
  tasks::Store& store = stateless_.task_store();
  tasks::Task* t = store.by_id(task_id);
  if (!t || tasks::is_terminal(t->status)) return;
  const bj::value* s = task.if_contains("status");
  const std::string_view status = s && s->is_string() ? std::string_view(s->as_string()) : "";
  // The end comes with the follower's tasks/result (with the result itself).
  if (status != "working" && status != "input_required") return;
  if (const bj::value* m = task.if_contains("statusMessage"); m && m->is_string())
    store.progress(task_id, std::string(m->as_string()));
  const tasks::Status before = t->status;
  if (status == "input_required" && before != tasks::Status::kInputRequired) {
    store.input_required(task_id, "{}");
  } else if (status == "working") {
    store.working(task_id);
  }
  t = store.by_id(task_id);
  if (!relay || !t || t->status != before) return;  // a change was told by changed()
  auto creator = creators_.find(task_id);
  if (creator == creators_.end()) return;
  if (auto session = creator->second.session.lock()) {
    session->push_unsolicited(
        json::make_notification("notifications/tasks/status", task_json(*t, store.limits().ttl)));
  }
}

}  // namespace toolbridge::frontend
