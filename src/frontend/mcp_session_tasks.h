#pragma once
// Tasks for clients of the handshake revisions (2025-11-25, `initialize`): the core tasks of that
// revision (SEP-1686) on the session front end. The gateway declares `capabilities.tasks` in its
// initialize result; a tools/call whose params carry `task` becomes a task at once
// (CreateTaskResult `{task}`), and tasks/get, tasks/result, tasks/list and tasks/cancel reach it
// for its owner. The call runs through the same store and follower as the stateless tasks
// (McpStateless::adopt): only the wire differs. Progress keeps flowing to the session's stream
// (with the task's related-task _meta) until the task ends; status changes are sent there as
// notifications/tasks/status. docs/tasks.md has the rules.
// A tool whose server has tasks of its own (a 2025-11-25 server that declares
// tasks.requests.tools.call, the tool marked with execution.taskSupport) runs as that server's
// task instead: the gateway's task is then a mapping to (server, instance, the server's task id),
// and tasks/get and tasks/cancel are asked of that instance (server_tasks.cpp, shared with the
// stateless front; mcp_session_tasks_upstream.cpp).
#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "base/expected.h"
#include "frontend/mcp_stateless.h"
#include "gateway/gateway.h"
#include "json/envelope.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

inline constexpr std::string_view kRelatedTask = "io.modelcontextprotocol/related-task";
// `params` (a JSON object's text) with _meta[related-task] naming `task_id`.
std::string with_related_task(std::string_view params, const std::string& task_id);
// The Task object of 2025-11-25 (ttl, pollInterval; a tool error is `failed`).
std::string task_json(const tasks::Task& t, std::chrono::milliseconds ttl);

class SessionTasks {
 public:
  SessionTasks(gateway::Gateway& gateway, McpStateless& stateless);

  // Whether this message of `session` is one of these tasks' (a tasks/* request, or a tools/call
  // with a `task` param) on a revision that has tasks.
  static bool claims(const gateway::Session& session, const json::Envelope& env,
                     std::string_view message);
  // A notifications/cancelled naming the request that started one of this session's tasks: the
  // task is cancelled (as by tasks/cancel, the call upstream with it) and true is returned (the
  // notification needs nothing more). False for any other message.
  bool cancels_task(const gateway::Session& session, const json::Envelope& env,
                    std::string_view message);
  // The session ends (DELETE): the tasks it started whose calls run on its own per_session
  // instances are cancelled (those instances end with it). Its other tasks run on.
  void ending(const gateway::Session& session);
  // Answers the one message of the POST (claims() said yes).
  boost::asio::awaitable<void> handle(transport::Exchange& ex,
                                      std::shared_ptr<gateway::Session> session,
                                      const transport::Headers& headers);

 private:
  struct Request {
    std::string id;  // raw JSON
    std::string method;
    std::string text;  // the whole message
    std::shared_ptr<gateway::Session> session;
  };
  std::string call(const Request& r);
  std::string get(const Request& r, tasks::Task& t);
  std::string cancel(const Request& r, tasks::Task& t);
  std::string list(const Request& r);
  // tasks/result: the call's own answer once the task has ended (waits until then).
  boost::asio::awaitable<std::string> result(transport::Exchange& ex, const Request& r,
                                             std::string task_id);
  // The task a request names for this session's owner, or the error response to send.
  base::Expected<tasks::Task*> task_of(const Request& r);
  // A status change: wakes tasks/result waiters, tells the creating session.
  void changed(const tasks::Task& t);

  // A server's own tasks (mcp_session_tasks_upstream.cpp, over ServerTasks).
  // Routes what the server says of its tasks (requests, status) to the creating session.
  void follow_server_tasks();
  // A task-augmented tools/call sent to the server as a task, once (never retried); the answer
  // is the gateway's task, mapped to the server's.
  boost::asio::awaitable<std::string> pass_call(const Request& r);
  // tasks/get and tasks/cancel of a running task of a server's own: asked of the instance that
  // holds it, then answered from the store. Empty when the task is not one (or has ended): the
  // gateway answers from its store alone.
  boost::asio::awaitable<std::string> pass_get(const Request& r, std::string task_id);
  boost::asio::awaitable<std::string> pass_cancel(const Request& r, std::string task_id);
  // Whether the tools/call `r` runs on a per_session instance bound to the session itself.
  bool runs_on_own_instance(const Request& r) const;

  gateway::Gateway& gateway_;
  McpStateless& stateless_;
  std::multimap<std::string, base::Timer*, std::less<>> waiters_;  // by task id
  // Who started each running task (by task id): its status notifications go to that session;
  // notifications/cancelled of the request that started it and the session's end reach it.
  struct Creator {
    std::weak_ptr<gateway::Session> session;
    std::string session_id;
    std::string request_id;  // raw JSON
    bool bound = false;      // its call runs on the session's own instance
  };
  std::map<std::string, Creator, std::less<>> creators_;
};

}  // namespace toolbridge::frontend
