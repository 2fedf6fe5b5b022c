// A 2026-07-28 server's own tasks (docs/tasks.md, "A server's own tasks"): followed by polling
// its tasks/get, their input requests passed to the client. The rest of ServerTasks is in
// server_tasks.cpp.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include "frontend/mcp_session_tasks.h"
#include "frontend/mcp_stateless.h"
#include "frontend/server_task_run.h"
#include "frontend/server_tasks.h"
#include "json/parse.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace bj = boost::json;
using namespace server_task;

ServerTasks::Polled ServerTasks::absorb(const std::string& task_id, const std::string& response) {
  tasks::Task* t = store_.by_id(task_id);
  UpstreamRun* run = t ? upstream_run(*t) : nullptr;
  if (!run || tasks::is_terminal(t->status)) return Polled::kEnded;
  const json::Envelope env = json::parse_envelope(response);
  if (!env.error.empty()) {
    // The server no longer knows the task (it restarted, or forgot it): it is gone.
    store_.fail(task_id, std::string(env.error.in(response)));
    ended(task_id);
    return Polled::kEnded;
  }
  const bj::value got = result_of(response);
  const bj::value* s = got.is_object() ? got.as_object().if_contains("status") : nullptr;
  const std::string_view status = s && s->is_string() ? std::string_view(s->as_string()) : "";
  if (status == "working") {
    server_status(task_id, got.as_object(), false);
    return Polled::kRunning;
  }
  if (status == "input_required") {
    if (base::Status passed = pass_input(task_id, got.as_object()); !passed) {
      // Failed first (the store drops the run: it lives on here), so the requests the cancel
      // refuses find the task ended; then the server is told.
      std::shared_ptr<tasks::Run> keep = t->run;
      store_.fail(task_id, gateway_error(passed.error()));
      run->cancel(passed.error());
      ended(task_id);
      return Polled::kEnded;
    }
    return Polled::kRunning;
  }
  if (status == "completed") {
    const bj::value* r = got.as_object().if_contains("result");
    if (r && r->is_object()) {
      store_.complete(task_id, with_related_task(bj::serialize(*r), task_id));
    } else {
      store_.fail(task_id,
                  gateway_error(run->display + ": the server's completed task had no result"));
    }
  } else if (status == "failed") {
    const bj::value* e = got.as_object().if_contains("error");
    const bj::value* code = e && e->is_object() ? e->as_object().if_contains("code") : nullptr;
    const bj::value* message =
        e && e->is_object() ? e->as_object().if_contains("message") : nullptr;
    const bool usable = code && code->is_int64() && message && message->is_string();
    store_.fail(task_id, usable ? bj::serialize(*e)
                                : gateway_error(run->display + ": the server's task failed"));
  } else if (status == "cancelled") {
    run->told = true;  // the server ended it: nothing to tell it
    store_.cancel(*t, run->display + ": the server cancelled its task");
  } else {
    return Polled::kUnusable;
  }
  ended(task_id);
  return Polled::kEnded;
}

asio::awaitable<void> ServerTasks::follow_polled(std::string task_id, std::weak_ptr<bool> alive) {
  // Bounded: one tasks/get per interval while the task runs in the store, which ends it at its
  // TTL at the latest (and sends the server tasks/cancel then); kMaxPollFailures unusable
  // answers in a row fail it.
  int failures = 0;
  for (;;) {
    if (alive.expired()) co_return;
    tasks::Task* t = store_.by_id(task_id);
    UpstreamRun* run = t ? upstream_run(*t) : nullptr;
    if (!run || tasks::is_terminal(t->status)) co_return;
    base::Timer timer(gateway_.io(), gateway_.clock(), run->poll);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (alive.expired()) co_return;
    t = store_.by_id(task_id);
    run = t ? upstream_run(*t) : nullptr;
    if (!run || tasks::is_terminal(t->status)) co_return;
    std::shared_ptr<tasks::Run> keep = t->run;
    const std::string method = "tasks/get";
    std::shared_ptr<Ask> a = co_await ask(gateway_, *run, method);
    if (alive.expired()) co_return;
    if (!a) {
      store_.fail(task_id, gateway_error("the server's instance that held this task is gone, and "
                                         "its task with it"));
      ended(task_id);
      co_return;
    }
    const std::string response = a->response;
    const Polled p = absorb(task_id, response);
    if (p == Polled::kEnded) co_return;
    failures = p == Polled::kUnusable ? failures + 1 : 0;
    if (failures >= kMaxPollFailures) {
      const std::string why = run->display + ": the server's tasks/get answered nothing usable " +
                              std::to_string(kMaxPollFailures) + " times in a row (" +
                              (a->failure.empty() ? std::string("no status") : a->failure) + ")";
      store_.fail(task_id, gateway_error(why));
      run->cancel(why);  // `keep` holds the run the store dropped
      ended(task_id);
      co_return;
    }
  }
}

}  // namespace toolbridge::frontend

namespace toolbridge::frontend {

base::Status ServerTasks::pass_input(const std::string& task_id, const bj::object& got) {
  tasks::Task* t = store_.by_id(task_id);
  UpstreamRun* run = t ? upstream_run(*t) : nullptr;
  if (!run) return base::Status::success();
  const bj::value* requests = got.if_contains("inputRequests");
  if (!requests || !requests->is_object()) {
    return base::fail(run->display + ": the server's input_required task named no inputRequests");
  }
  for (const auto& [key, request] : requests->as_object()) {
    if (run->asked.contains(key)) continue;  // passed on already (its answer may be on its way)
    const bj::object* r = request.if_object();
    const bj::value* method = r ? r->if_contains("method") : nullptr;
    const bj::value* params = r ? r->if_contains("params") : nullptr;
    const bool known =
        method && method->is_string() &&
        (method->as_string() == "elicitation/create" ||
         method->as_string() == "sampling/createMessage" || method->as_string() == "roots/list");
    if (!known || (params && !params->is_object()) || key.empty() || key.size() > kMaxInputKey ||
        run->asked.size() >= kMaxInputRequests) {
      return base::fail(run->display +
                        ": the server's task asked for input the gateway cannot pass on (an "
                        "inputRequests entry that is not an elicitation, sampling or roots "
                        "request, a key over 256 bytes, or more than 64 requests)");
    }
    run->asked.emplace(key);
    bj::object p = params ? params->as_object() : bj::object();
    bj::value& meta = p["_meta"];
    if (!meta.is_object()) meta = bj::object();
    meta.as_object()[gateway::kInputKeyMeta] = std::string_view(key);
    std::string text = with_related_task(bj::serialize(p), task_id);
    // The client's answer goes to the server as tasks/update; a refusal (the client lacks the
    // capability, or the task ended) fails the task.
    upstream::CallSink::Reply reply = [this, alive = std::weak_ptr<bool>(alive_), task_id,
                                       key = std::string(key)](bool is_error, std::string raw) {
      if (alive.expired()) return;
      tasks::Task* now = store_.by_id(task_id);
      UpstreamRun* r = now ? upstream_run(*now) : nullptr;
      if (!r || tasks::is_terminal(now->status)) return;
      if (is_error) {
        std::shared_ptr<tasks::Run> keep = now->run;
        store_.fail(task_id, raw);
        r->cancel("the client refused the server's input request");
        ended(task_id);
        return;
      }
      boost::system::error_code ec;
      const bj::value answer = json::parse(raw, ec);
      auto inst = r->instance.lock();
      if (ec || !answer.is_object() || !inst) return;
      const std::string update = bj::serialize(
          bj::object{{"taskId", r->upstream_id}, {"inputResponses", bj::object{{key, answer}}}});
      inst->call("tasks/update", update, "0", {}, std::make_shared<Ignore>(), r->timeout,
                 r->display);
      if (!r->asks && r->unanswered > 0 && --r->unanswered == 0) store_.working(task_id);
    };
    const std::string m(method->as_string());
    if (run->asks) {
      // Refused at once when the client did not declare the capability.
      run->asks->on_server_request(m, std::move(text), std::move(reply));
      now_asking(task_id);
    } else if (on_session_request) {
      ++run->unanswered;
      store_.input_required(task_id, "{}");
      on_session_request(task_id, m, std::move(text), std::move(reply));
    } else {
      return base::fail(run->display + ": the gateway cannot ask this task's client");
    }
    t = store_.by_id(task_id);
    run = t ? upstream_run(*t) : nullptr;
    if (!run || tasks::is_terminal(t->status)) return base::Status::success();
  }
  return base::Status::success();
}

void ServerTasks::now_asking(const std::string& task_id) {
  tasks::Task* t = store_.by_id(task_id);
  UpstreamRun* run = t ? upstream_run(*t) : nullptr;
  if (run && run->asks && run->asks->has_asks() && !tasks::is_terminal(t->status))
    store_.input_required(task_id, run->asks->pending_requests());
}

}  // namespace toolbridge::frontend
