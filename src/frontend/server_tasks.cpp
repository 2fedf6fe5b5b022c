#include "frontend/server_tasks.h"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/json.hpp>
#include <exception>
#include <set>

#include "config/config.h"
#include "frontend/mcp_session_tasks.h"
#include "frontend/mcp_stateless.h"
#include "frontend/server_task_run.h"
#include "gateway/methods.h"
#include "json/parse.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace bj = boost::json;

namespace server_task {

// `method` ({taskId: the server's id}) asked of the instance that holds `run`'s task; nullptr
// when the instance is gone.
asio::awaitable<std::shared_ptr<Ask>> ask(gateway::Gateway& gateway, const UpstreamRun& run,
                                          std::string method) {
  auto inst = run.instance.lock();
  if (!inst) co_return nullptr;
  auto a = std::make_shared<Ask>(gateway.clock());
  inst->call(method, R"({"taskId":)" + json::quote(run.upstream_id) + "}", "0", {}, a, run.timeout,
             run.display);
  if (!a->done) {
    // The instance answers every call by its deadline (a timeout is a failure), or fails it.
    const base::Clock::time_point until =
        gateway.clock().now() + run.timeout + std::chrono::seconds(1);
    const bool answered = co_await a->answered.wait(until);
    (void)answered;  // `done` and what the sink holds say how it ended
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

}  // namespace server_task

using namespace server_task;

bj::object* params_of(bj::value& msg) {
  bj::value* p = msg.is_object() ? msg.as_object().if_contains("params") : nullptr;
  return p && p->is_object() ? &p->as_object() : nullptr;
}

// Follows a server's task to its end: the server's tasks/result, pending on the instance that
// holds the task.
class UpstreamFollower final : public upstream::CallSink {
 public:
  UpstreamFollower(ServerTasks& owner, std::string task_id, std::string display)
      : owner_(owner),
        alive_(owner.alive_),
        task_id_(std::move(task_id)),
        display_(std::move(display)) {}

  void on_response(std::string message) override {
    if (alive_.expired()) return;
    tasks::Store& store = owner_.store_;
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
    owner_.ended(task_id_);
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
    tasks::Store& store = owner_.store_;
    tasks::Task* t = store.by_id(task_id_);
    UpstreamRun* run = t ? upstream_run(*t) : nullptr;
    if (run && failure == upstream::Failure::kOverloaded) run->cancel(why);  // not left running
    if (run && run->asks) run->asks->refuse_all(why);
    store.fail(task_id_, gateway_error(why));
    owner_.ended(task_id_);
  }
  void on_notification(std::string message) override {
    if (alive_.expired()) return;
    const json::Envelope env = json::parse_envelope(message);
    if (env.method != "notifications/tasks/status") return;
    boost::system::error_code ec;
    const bj::value p = json::parse(env.params.in(message), ec);
    if (!ec && p.is_object()) owner_.server_status(task_id_, p.as_object(), true);
  }
  // The server asks the client something for its task, tied to the gateway's task: a stateless
  // client's wait as the task's inputRequests, a session's go to its stream.
  void on_server_request(const std::string& method, std::string params, Reply reply) override {
    tasks::Task* t = alive_.expired() ? nullptr : owner_.store_.by_id(task_id_);
    UpstreamRun* run = t ? upstream_run(*t) : nullptr;
    if (!run) {
      reply(true, gateway_error("the gateway no longer follows this task"));
      return;
    }
    params = with_related_task(params, task_id_);
    if (!run->asks) {
      if (!owner_.on_session_request) {
        reply(true, gateway_error("the gateway cannot ask this task's client"));
        return;
      }
      owner_.on_session_request(task_id_, method, std::move(params), std::move(reply));
      return;
    }
    // Refused at once when the client did not declare the capability.
    run->asks->on_server_request(method, std::move(params), std::move(reply));
    if (run->asks->has_asks())
      owner_.store_.input_required(task_id_, run->asks->pending_requests());
  }

 private:
  ServerTasks& owner_;
  std::weak_ptr<bool> alive_;
  std::string task_id_;
  std::string display_;
};

ServerTasks::ServerTasks(gateway::Gateway& gateway, tasks::Store& store)
    : gateway_(gateway), store_(store) {}

ServerTasks::~ServerTasks() = default;

std::shared_ptr<upstream::Upstream> ServerTasks::server_for(std::string_view tool) const {
  const catalog::Entry* entry = gateway_.catalog().tool(tool);
  if (!entry) return nullptr;
  auto up = gateway_.upstream(entry->server);
  if (!up) return nullptr;
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

bool ServerTasks::holds(const tasks::Task& t) {
  return upstream_run(t) != nullptr;
}

asio::awaitable<void> ServerTasks::wait_end(std::string task_id, std::chrono::milliseconds window) {
  const tasks::Task* t = store_.by_id(task_id);
  if (!t || !upstream_run(*t)) co_return;  // ended already
  std::shared_ptr<base::Event>& slot = ends_[task_id];
  if (!slot) slot = std::make_shared<base::Event>(gateway_.clock());
  const std::shared_ptr<base::Event> end = slot;
  const base::Clock::time_point until = gateway_.clock().now() + window;
  const bool told = co_await end->wait(until);
  (void)told;  // ended or not, the caller reads the store
  if (auto it = ends_.find(task_id); it != ends_.end() && it->second == end && end->waiting() == 0)
    ends_.erase(it);
}

void ServerTasks::ended(const std::string& task_id) {
  const auto it = ends_.find(task_id);
  if (it == ends_.end()) return;
  const std::shared_ptr<base::Event> end = std::move(it->second);
  ends_.erase(it);
  end->notify_all();
}

bool ServerTasks::per_session(std::string_view tool) const {
  const catalog::Entry* entry = gateway_.catalog().tool(tool);
  auto up = entry ? gateway_.upstream(entry->server) : nullptr;
  return up && up->config().policy == config::Policy::kPerSession;
}

void ServerTasks::keep_busy(const std::string& task_id,
                            const std::shared_ptr<gateway::Session>& session) {
  tasks::Task* t = store_.by_id(task_id);
  UpstreamRun* run = t ? upstream_run(*t) : nullptr;
  if (!run || !session) return;
  // An entry of the session's calls in flight (no JSON-RPC id looks like it), released with the
  // run: the store drops it when the task ends or is forgotten.
  const std::string key = "task:" + task_id;
  session->in_flight[key] = gateway::Session::InFlight{};
  run->ended = [weak = std::weak_ptr<gateway::Session>(session), key] {
    if (auto s = weak.lock()) s->in_flight.erase(key);
  };
}

asio::awaitable<ServerTasks::Started> ServerTasks::start(
    std::shared_ptr<gateway::Session> session, std::string owner, std::string request_id,
    std::string message, std::shared_ptr<gateway::Conversation> asks, bool keep_immediate) {
  Started out;
  const std::string& rid = request_id;
  // A task the gateway could not keep is not started on the server at all.
  if (base::Status room = store_.room_for(owner); !room) {
    out.response = json::make_error(rid, json::kOverloaded, room.error());
    co_return out;
  }
  boost::system::error_code ec;
  bj::value msg = json::parse(message, ec);
  bj::object* params = ec ? nullptr : params_of(msg);
  if (!params || !params->contains("task") || !(*params)["task"].is_object()) {
    out.response = json::make_error(rid, json::kInvalidParams,
                                    "a task-augmented tools/call needs params.task (an object)");
    co_return out;
  }
  // The server keeps the task as long as the gateway does.
  bj::object& task = (*params)["task"].as_object();
  task["ttl"] = store_.limits().ttl.count();
  const std::string text = bj::serialize(msg);

  // Through the pipeline once: resolve, repair, authorize, admission, breaker, dispatch.
  auto stream = std::make_shared<gateway::PostStream>(gateway_.io(), session, false);
  std::shared_ptr<call::Call> call;
  gateway_.methods().handle(session, stream, json::parse_envelope(text), text, &call);
  if (!call) {  // answered at once (malformed, refused)
    out.response = stream->responses.empty()
                       ? json::make_error(rid, json::kInternalError, "the call was not run")
                       : stream->responses.front();
    co_return out;
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
  gateway::Methods::settle(session, *stream, *call, failure, std::move(result));
  if (cancelled || stream->responses.empty()) {
    out.response = json::make_error(rid, json::kInternalError,
                                    "the call was cancelled before its server made the task");
    co_return out;
  }
  const std::string response = stream->responses.front();
  const json::Envelope env = json::parse_envelope(response);
  if (!env.error.empty()) {  // no task was made: the error as it is
    out.response = response;
    co_return out;
  }
  const bj::value answer = result_of(response);
  const bj::value* made = answer.is_object() ? answer.as_object().if_contains("task") : nullptr;
  // A 2026-07-28 server answers SEP-2663's CreateTaskResult: resultType "task", the task's
  // fields at the top.
  const bj::value* result_type =
      answer.is_object() ? answer.as_object().if_contains("resultType") : nullptr;
  const bool polled = result_type && result_type->is_string() && result_type->as_string() == "task";
  if (polled) made = &answer;
  const bj::value* up_id =
      made && made->is_object() ? made->as_object().if_contains("taskId") : nullptr;
  std::shared_ptr<upstream::Instance> inst = call->instance.lock();
  if (!up_id || !up_id->is_string() || up_id->as_string().empty() ||
      up_id->as_string().size() >= kMaxUpstreamTaskId) {
    // The server answered at once (or the gateway failed the call as an isError result).
    const bool tool_result = answer.is_object() && !answer.as_object().contains("task") && !polled;
    const std::string no_id =
        call->route.display_name + ": the server's answer named no usable task id";
    if (!keep_immediate) {  // the ordinary answer (SEP-2663's immediate result)
      out.response = tool_result ? response : json::make_error(rid, json::kInternalError, no_id);
      co_return out;
    }
    // A task that has ended already, as the client asked for a task.
    const base::Expected<tasks::Task*> t = store_.create(owner, nullptr);
    if (!t) {
      out.response = json::make_error(rid, json::kOverloaded, t.error());
      co_return out;
    }
    out.task_id = (*t)->id;
    if (tool_result) {
      store_.complete(out.task_id, std::string(env.result.in(response)));
    } else {
      store_.fail(out.task_id, gateway_error(no_id));
    }
    co_return out;
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
  run->asks = std::move(asks);
  run->polled = polled;
  if (polled) {
    const bj::value* every = answer.as_object().if_contains("pollIntervalMs");
    const std::int64_t ms = every && every->is_int64() ? every->as_int64() : kDefaultPoll.count();
    run->poll = std::clamp(std::chrono::milliseconds(ms), kMinPoll, kMaxPoll);
  }
  const base::Expected<tasks::Task*> t = store_.create(owner, run);
  if (!t) {
    run->cancel(t.error());  // made on the server, but not kept here: cancelled there
    out.response = json::make_error(rid, json::kOverloaded, t.error());
    co_return out;
  }
  out.task_id = (*t)->id;
  if (!inst || inst->state() != upstream::Instance::State::kReady) {
    store_.fail(out.task_id,
                gateway_error(run->display + ": the server's instance that made this task is gone, "
                                             "and its task with it"));
  } else if (polled) {
    asio::co_spawn(gateway_.io(), follow_polled(out.task_id, alive_), asio::detached);
  } else {
    auto follower = std::make_shared<UpstreamFollower>(*this, out.task_id, run->display);
    run->follower = follower;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>((*t)->expires - gateway_.clock().now());
    inst->call("tasks/result", R"({"taskId":)" + json::quote(run->upstream_id) + "}", "0", {},
               follower, std::max(left, std::chrono::milliseconds(1)), run->display);
  }
  co_return out;
}

asio::awaitable<void> ServerTasks::refresh(std::string task_id) {
  tasks::Task* t = store_.by_id(task_id);
  UpstreamRun* run = t ? upstream_run(*t) : nullptr;
  if (!run) co_return;
  // The run lives while the ask waits (the store may end the task meanwhile).
  std::shared_ptr<tasks::Run> keep = t->run;
  const bool polled = run->polled;
  std::shared_ptr<Ask> a = co_await ask(gateway_, *run, "tasks/get");
  if (!a) co_return;
  if (polled) {
    absorb(task_id, a->response);
    co_return;
  }
  if (const bj::value got = result_of(a->response); got.is_object())
    server_status(task_id, got.as_object(), false);
}

asio::awaitable<base::Status> ServerTasks::cancel(std::string task_id, std::string why) {
  tasks::Task* t = store_.by_id(task_id);
  UpstreamRun* run = t ? upstream_run(*t) : nullptr;
  if (run && run->cancel_supported && !run->instance.expired()) {
    run->told = true;
    std::shared_ptr<tasks::Run> keep = t->run;
    std::shared_ptr<Ask> a = co_await ask(gateway_, *run, "tasks/cancel");
    const std::string response = a ? a->response : std::string();
    const json::Envelope env = json::parse_envelope(response);
    // The server refused (it had just ended the task): its answer, and the follower brings the
    // end. An instance that is gone: the store cancels the task as it is.
    if (!env.error.empty()) co_return base::fail(std::string(env.error.in(response)));
  }
  // The follower may have seen the server end it already (its tasks/result answered first).
  if (tasks::Task* now = store_.by_id(task_id)) store_.cancel(*now, why);
  co_return base::Status::success();
}

void ServerTasks::server_status(const std::string& task_id, const bj::object& task, bool relay) {
  tasks::Task* t = store_.by_id(task_id);
  if (!t || tasks::is_terminal(t->status)) return;
  const bj::value* s = task.if_contains("status");
  const std::string_view status = s && s->is_string() ? std::string_view(s->as_string()) : "";
  // The end comes with the follower's tasks/result (with the result itself).
  if (status != "working" && status != "input_required") return;
  if (const bj::value* m = task.if_contains("statusMessage"); m && m->is_string())
    store_.progress(task_id, std::string(m->as_string()));
  const tasks::Status before = t->status;
  UpstreamRun* run = upstream_run(*t);
  if (run && run->asks) {
    // A stateless client's task is input_required while its inputRequests wait (the requests
    // themselves set it, with what they ask); the server's word alone changes nothing.
  } else if (status == "input_required" && before != tasks::Status::kInputRequired) {
    store_.input_required(task_id, "{}");
  } else if (status == "working") {
    store_.working(task_id);
  }
  t = store_.by_id(task_id);
  if (!relay || !t || t->status != before) return;  // a change was told by on_change
  if (on_relay) on_relay(*t);
}

}  // namespace toolbridge::frontend
