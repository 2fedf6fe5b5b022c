#pragma once
// MCP 2026-07-28 (stateless) on the same /mcp endpoint as the handshake revisions. A request
// without Mcp-Session-Id whose MCP-Protocol-Version header or params._meta names the stateless
// revision (or that is server/discover) is served here: each POST is self-contained (version
// and client capabilities in params._meta, checked against the MCP-Protocol-Version, Mcp-Method
// and Mcp-Name headers), answered with `resultType`, lists with `ttlMs`/`cacheScope`, and a
// handshake-era server's sampling/elicitation/roots request becomes an `input_required` result
// (src/gateway/input_required.h).
#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/expected.h"
#include "frontend/server_tasks.h"
#include "gateway/gateway.h"
#include "gateway/input_required.h"
#include "mcp/revision.h"
#include "tasks/store.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

class McpStateless {
 public:
  explicit McpStateless(gateway::Gateway& gateway);

  // Whether a request that carries no Mcp-Session-Id is a stateless one. Handshake requests
  // (with a session, or initialize) never reach here, so their path costs one header look-up.
  static bool claims(const transport::Request& req);
  tasks::Store& task_store() { return tasks_; }
  // A server's own tasks, over the same store (server_tasks.h).
  ServerTasks& server_tasks() { return server_tasks_; }

  // The tasks of both eras share one store and one follower (mcp_tasks.cpp): the call whose
  // events `stream` gets becomes a task of `owner` and runs on without the exchange that started
  // it; its result, error, input requests and progress go to the store. A failure (the call is
  // then cancelled) when the owner holds too many tasks. `call`: the call when it was taken out
  // of its session's calls (it outlives the session), which cancels it directly.
  base::Expected<tasks::Task*> adopt(const std::shared_ptr<gateway::PostStream>& stream,
                                     const std::shared_ptr<gateway::Session>& session,
                                     const std::string& owner, std::weak_ptr<call::Call> call = {});
  // The task support of the tool a tools/call names: "optional", "required" (the server's
  // execution.taskSupport, or the server's task_tools) or empty.
  std::string task_support(std::string_view tool) const;
  // Called after each status change of a task, after the stateless listeners were told (the
  // session front end's status notifications and tasks/result waiters).
  std::function<void(const tasks::Task&)> on_task_change;

  boost::asio::awaitable<void> post(transport::Exchange& ex, std::string_view trajectory);
  // GET and DELETE have no meaning without sessions: 405 with Allow: POST.
  boost::asio::awaitable<void> not_allowed(transport::Exchange& ex);

 private:
  struct Request {
    std::string id;  // raw JSON
    std::string method;
    boost::json::object params;
    mcp::StatelessEnvelope envelope;
    bool accepts_sse = false;
    std::string trajectory;  // named by the URL or X-Toolbridge-Trajectory, else empty
  };
  using Handler = boost::asio::awaitable<void> (McpStateless::*)(transport::Exchange&, Request&);

  boost::asio::awaitable<void> discover(transport::Exchange& ex, Request& r);
  boost::asio::awaitable<void> list(transport::Exchange& ex, Request& r);
  boost::asio::awaitable<void> listen(transport::Exchange& ex, Request& r);
  boost::asio::awaitable<void> call(transport::Exchange& ex, Request& r);

  // SEP-2243: the tool's x-mcp-header arguments against the request's Mcp-Param-* headers.
  std::optional<mcp::Rejection> param_header_mismatch(const transport::Exchange& ex,
                                                      const Request& r,
                                                      const std::string& tool) const;

  // The tasks extension (mcp_tasks.cpp, docs/tasks.md).
  boost::asio::awaitable<void> task_get(transport::Exchange& ex, Request& r);
  boost::asio::awaitable<void> task_update(transport::Exchange& ex, Request& r);
  boost::asio::awaitable<void> task_cancel(transport::Exchange& ex, Request& r);
  // Makes the call a task of its session's owner and returns the CreateTaskResult response to
  // `id`. If the owner holds too many tasks, the call is cancelled and the response is the error.
  std::string become_task(const std::shared_ptr<gateway::Conversation>& conv, std::string_view id);
  // A tools/call of a tool whose server has tasks of its own, from a client that declared the
  // extension: sent as the server's task; the answer is the gateway's task (or the server's
  // immediate result). `provided`: inputResponses the request carried.
  boost::asio::awaitable<void> server_task(transport::Exchange& ex, Request& r,
                                           std::shared_ptr<gateway::Session> session,
                                           boost::json::object provided);
  // Follows a task's call to its end: its input requests (a Conversation's), its progress, its
  // result or error into the store.
  boost::asio::awaitable<void> run_task(std::shared_ptr<gateway::PostStream> stream,
                                        std::string id);
  // A task's status changed: notifications/tasks to the subscriptions/listen streams that asked
  // for it (SEP-2663), then on_task_change.
  void task_changed(const tasks::Task& t);
  // Of subscriptions/listen: the task ids of notifications.taskIds this client may follow (its
  // own, known ones); each one's changes are pushed to `channel` with `meta`. Fails (empty
  // optional) when the client did not declare the extension.
  std::optional<std::vector<std::string>> follow_tasks(
      transport::Exchange& ex, Request& r, const std::shared_ptr<gateway::Channel>& channel,
      const std::string& meta);
  // The task `r` names for this client, or nullptr after answering the error (not negotiated:
  // -32021; unknown, expired or another tenant's: -32602).
  boost::asio::awaitable<tasks::Task*> task_of(transport::Exchange& ex, Request& r);

  // The stateless session of the client (its owner): per_session instances of calls that name
  // no trajectory are bound to it; a failure if no session can be made.
  base::Expected<std::shared_ptr<gateway::Session>> session_for(transport::Exchange& ex);
  // Starts the call (params cleaned of the revision's own members) on `conv`.
  void start(const std::shared_ptr<gateway::Conversation>& conv, Request& r);
  // The request start() sends: params cleaned of the revision's own members.
  std::string request_text(const Request& r) const;
  // Answers this exchange with the conversation's next outcome: its response, or an
  // input_required result for the server requests waiting (the call stays parked).
  // `id`: the request this exchange answers (a retry has its own).
  boost::asio::awaitable<void> answer(transport::Exchange& ex,
                                      std::shared_ptr<gateway::Conversation> conv, std::string id);
  // The cacheScope of lists: private when a per_session server may answer differently.
  std::string_view cache_scope() const;

  gateway::Gateway& gateway_;
  gateway::InputRequired input_required_;
  std::unordered_map<std::string_view, Handler> table_;
  std::unordered_map<std::string, std::string> sessions_;  // owner -> stateless session id
  std::uint64_t next_subscription_ = 1;
  tasks::Store tasks_;
  ServerTasks server_tasks_{gateway_, tasks_};
  struct TaskListener {
    std::weak_ptr<gateway::Channel> channel;
    std::string meta;  // the notification's _meta (the listen request's subscription id)
  };
  std::multimap<std::string, TaskListener, std::less<>> task_listeners_;  // by task id
};

// The -32602 message of a task id that is unknown to its caller (never made, expired, or another
// tenant's: not told apart), in both eras.
std::string unknown_task_message(std::string_view task_id);
// Whether a stateless request's clientCapabilities declare the tasks extension.
bool negotiates_tasks(const mcp::StatelessEnvelope& envelope);
inline constexpr std::string_view kTasksExtension = "io.modelcontextprotocol/tasks";
// The pollInterval(Ms) every task answer suggests, in both eras.
inline constexpr int kTaskPollIntervalMs = 500;
// Server requests of one call sent within this window of the first go to its client together (one
// input_required result, or one input_required task status).
inline constexpr std::chrono::milliseconds kGatherWindow{5};
// A call that may become a task answers at once if it ends (or asks its client) within this
// window of its round's start, and becomes a task otherwise (docs/tasks.md). A server's own task
// that ends within it answers as the call did too.
inline constexpr std::chrono::milliseconds kTaskWindow{100};

// A JSON-RPC response with `resultType: "complete"` added to its result (errors unchanged).
std::string with_result_type(std::string response);
// `members` (raw JSON text: `"k":v,...`) spliced at the front of the response's result object.
std::string with_result_members(std::string response, std::string_view members);

}  // namespace toolbridge::frontend
