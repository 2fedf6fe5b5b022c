// POST /v1/batch with mode "tasks": every call that can run becomes a task of the MCP tasks
// extension (docs/tasks.md), answered at once with the task ids; each task ends when its call
// does, and is read with tasks/get (or toolbridge.Client.task(id)) by the same tenant.
#include <boost/asio/co_spawn.hpp>
#include <boost/beast/http.hpp>

#include "base/spawn.h"
#include "frontend/batch.h"
#include "frontend/batch_codec.h"
#include "frontend/call_run.h"
#include "frontend/client_identity.h"
#include "json/envelope.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using call::Call;
using call::Fault;
using call::Result;
using transport::Exchange;

namespace {

// A batch call seen from its task: cancelling the task cancels the call through the pipeline.
class BatchCallRun final : public tasks::Run {
 public:
  explicit BatchCallRun(std::weak_ptr<Call> call) : call_(std::move(call)) {}
  void cancel(const std::string& why) override {
    if (auto c = call_.lock(); c && !c->cancelled()) c->cancel(why);
  }
  std::string provide(const boost::json::object&) override {
    return {};
  }  // batch calls ask nothing

 private:
  std::weak_ptr<Call> call_;
};

// The call's result into its task: the server's result (tool errors included: `isError`), the
// server's JSON-RPC error, or the gateway's own fault as an error naming its outcome.
void settle(tasks::Store& store, const std::string& id, const Result& r) {
  if (r.answered_by_server()) {
    const json::Envelope env = json::parse_envelope(r.response);
    if (!env.result.empty()) {
      store.complete(id, std::string(env.result.in(r.response)));
      return;
    }
    if (!env.error.empty()) {
      store.fail(id, std::string(env.error.in(r.response)));
      return;
    }
  }
  const std::string error = R"({"code":-32603,"message":)" + json::quote(r.why) +
                            R"(,"data":{"outcome":")" + std::string(outcome_name(r.fault)) +
                            R"("}})";
  store.fail(id, error);
}

// Holds a tasks batch's calls until the last ends, then ends its ephemeral trajectory.
asio::awaitable<void> follow(std::shared_ptr<CallRun> run, gateway::Gateway& gateway,
                             std::string release_key) {
  co_await run->wait();
  run->on_result = nullptr;
  if (!release_key.empty()) gateway.release_session(release_key);
}

}  // namespace

boost::asio::awaitable<void> Batch::start_tasks(Exchange& ex, std::shared_ptr<CallRun> run,
                                                const BatchRequest& request,
                                                const CallScope& scope) {
  if (!tasks_) {
    const BatchRefusal r{501, "not_implemented", "mode \"tasks\" has no task store here"};
    co_await refuse(ex, r, {});
    co_return;
  }
  // The owner the MCP front end names for the same caller (client_identity.h): the API key's
  // tenant, else the tenant the batch names, else its header or address.
  const base::Expected<std::string> owner =
      ex.principal || scope.tenant.empty() ? owner_of(ex) : "tenant " + scope.tenant;
  const std::size_t n = request.calls.size();
  auto ids = std::make_shared<std::vector<std::string>>(n);
  std::string body = R"({"tasks":[)";
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) body += ',';
    body += R"({"tool":)";
    append_quoted(body, request.calls[i].tool);
    tasks::Task* task = nullptr;
    if (run->calls[i] && owner) {
      base::Expected<tasks::Task*> created =
          tasks_->create(*owner, std::make_shared<BatchCallRun>(run->calls[i]));
      task = created ? *created : nullptr;
      if (!task) {
        run->results[i] = Result::failure(Fault::kOverloaded, created.error());
        run->calls[i] = nullptr;
      }
    }
    if (!task) {
      const Result& r = *run->results[i];
      body += R"(,"outcome":")" + std::string(outcome_name(r.fault)) + R"(","error":{"message":)" +
              json::quote(r.why) + "}}";
      continue;
    }
    (*ids)[i] = task->id;
    body += R"(,"task_id":)" + json::quote(task->id) + R"(,"status":"working"})";
  }
  body += "]}";
  run->on_result = [store = tasks_, ids](std::size_t i, const Result& r) {
    if (!(*ids)[i].empty()) settle(*store, (*ids)[i], r);
  };
  ++*accepted_;
  run->start();
  // The calls outlive the request: a follower holds them and ends the ephemeral trajectory.
  std::string release_key = scope.ephemeral ? scope.key : std::string();
  asio::co_spawn(gateway_.io(), follow(run, gateway_, std::move(release_key)),
                 base::log_failure("batch tasks"));
  co_await ex.reply(http::status::ok, "application/json", std::move(body), {});
}

}  // namespace toolbridge::frontend
