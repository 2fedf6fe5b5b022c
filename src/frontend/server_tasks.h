#pragma once
// A server's own tasks (docs/tasks.md, "A server's own tasks"), for both front ends: a
// 2025-11-25 server that declares tasks.requests.tools.call runs a tool it marks with
// execution.taskSupport as its own task. The task-augmented tools/call goes through the pipeline
// once (never retried, cached or replayed), and the server's CreateTaskResult becomes a gateway
// task whose unguessable, tenant-scoped id maps to (server, instance, the server's task id). A
// follower keeps the server's tasks/result pending on that instance until the task ends: it
// brings the result (or the instance's death) into the store and routes what the server says of
// the task meanwhile. The pending request also holds the instance (a pool does not retire or
// recycle an instance with a call in flight). Sessions of 2025-11-25 (mcp_session_tasks*.cpp) and
// stateless clients (McpStateless::server_task, mcp_tasks.cpp) differ only in their wire and
// in where the server's requests go. A 2026-07-28 server (SEP-2663) has no tasks/result to hold:
// its task is followed by a bounded poll of its tasks/get instead (follow_polled), and its input
// requests are passed to the client (pass_input), their answers sent back as tasks/update.
#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/event.h"
#include "base/expected.h"
#include "gateway/gateway.h"
#include "gateway/input_required.h"
#include "tasks/store.h"

namespace toolbridge::frontend {

class ServerTasks {
 public:
  ServerTasks(gateway::Gateway& gateway, tasks::Store& store);
  ~ServerTasks();
  ServerTasks(const ServerTasks&) = delete;
  ServerTasks& operator=(const ServerTasks&) = delete;

  // The server that runs `tool` as a task of its own, or null: a 2025-11-25 server that declares
  // tasks.requests.tools.call (a 2026-07-28 one: the tasks extension), the tool marked with
  // execution.taskSupport by the server itself. For a per_session server the front keeps the
  // session whose instance holds the task from ending idle under it (keep_busy).
  std::shared_ptr<upstream::Upstream> server_for(std::string_view tool) const;
  // Whether `tool`'s server is per_session (its call runs on the session's own instance unless
  // it names a trajectory).
  bool per_session(std::string_view tool) const;

  struct Started {
    // Set when no task is running: the JSON-RPC response to give as it is (the call's error, a
    // refusal, or, `task_id` empty, the server's immediate answer when `keep_immediate` was not
    // asked for).
    std::string response;
    std::string task_id;  // the gateway's task (running, or ended already)
  };
  // Sends `message` (a tools/call request of `session`, whose params carry `task`: its ttl is
  // set to the gateway's task_ttl) to the server as a task, once. `asks`: where the server's
  // requests of the task wait for the client (a stateless client's Conversation: they become the
  // task's inputRequests, answered by tasks/update); null: they go to on_session_request.
  // `keep_immediate`: a server that answers at once (no task) still gives a task, ended.
  boost::asio::awaitable<Started> start(std::shared_ptr<gateway::Session> session,
                                        std::string owner, std::string request_id,
                                        std::string message,
                                        std::shared_ptr<gateway::Conversation> asks,
                                        bool keep_immediate);
  // Waits until the task `task_id` ends (its follower brought the end) or `window` has passed.
  boost::asio::awaitable<void> wait_end(std::string task_id, std::chrono::milliseconds window);
  // Whether `t` is a running task of a server's own.
  static bool holds(const tasks::Task& t);
  // `session` does not end idle while the running task `task_id` is kept (until it ends, is
  // cancelled, or expires): its own per_session instance holds the task.
  void keep_busy(const std::string& task_id, const std::shared_ptr<gateway::Session>& session);
  // tasks/get: asks the instance that holds the task (bounded by the server's call_timeout);
  // its status and statusMessage update the store's task. Nothing when it is not one.
  boost::asio::awaitable<void> refresh(std::string task_id);
  // tasks/cancel: sent to the instance (if the server declares tasks.cancel), then the store's
  // task is cancelled. Fails when the server refused (it had just ended the task; the follower
  // brings the end): error() is the server's JSON-RPC error object (raw JSON). A task that is not
  // one: the store alone.
  boost::asio::awaitable<base::Status> cancel(std::string task_id, std::string why);

  // Sessions: a server request of a task that has no `asks` (params carry the gateway's
  // related-task _meta).
  std::function<void(const std::string& task_id, const std::string& method, std::string params,
                     upstream::CallSink::Reply reply)>
      on_session_request;
  // The server's status notification of a running task that changed only its statusMessage
  // (a change of status is told by the store's on_change).
  std::function<void(const tasks::Task&)> on_relay;

 private:
  friend class UpstreamFollower;
  // The server said this of its task (a status notification, a tasks/get answer): the store's
  // status and statusMessage follow it; `relay`: a status notification (on_relay when only the
  // statusMessage changed).
  void server_status(const std::string& task_id, const boost::json::object& task, bool relay);

  // The follower ended the task: wait_end() returns.
  void ended(const std::string& task_id);

  // A 2026-07-28 server's task (SEP-2663): no tasks/result to hold, so it is followed by a
  // bounded poll of its tasks/get (server_tasks.cpp names the bounds).
  enum class Polled { kRunning, kEnded, kUnusable };
  // A tasks/get response of such a server: the store's task follows it (its end, with the
  // inlined result or error; input_required passes its requests on).
  Polled absorb(const std::string& task_id, const std::string& response);
  boost::asio::awaitable<void> follow_polled(std::string task_id, std::weak_ptr<bool> alive);
  // Such a task's inputRequests (a tasks/get answer `got`) passed to the client, each once: a
  // stateless client's become the task's inputRequests, a session's go to its stream; each answer
  // goes to the server as tasks/update. Fails when they cannot be passed on.
  base::Status pass_input(const std::string& task_id, const boost::json::object& got);
  void now_asking(const std::string& task_id);

  gateway::Gateway& gateway_;
  tasks::Store& store_;
  // What wait_end() waits on, by task id: one event per task, shared by its waits (the last one
  // out, or the task's end, removes it).
  std::unordered_map<std::string, std::shared_ptr<base::Event>> ends_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// The params object of a JSON-RPC message held in `msg`, or nullptr.
boost::json::object* params_of(boost::json::value& msg);

}  // namespace toolbridge::frontend
