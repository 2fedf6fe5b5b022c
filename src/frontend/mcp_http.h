#pragma once
// MCP Streamable HTTP (2025-03-26, 2025-06-18, 2025-11-25) on /mcp: POST carries JSON-RPC
// messages (answered as JSON, or as an SSE stream once something else must go out first), GET
// opens the session's stream for messages not tied to a POST, DELETE ends the session.
#include <boost/asio/awaitable.hpp>
#include <boost/container/small_vector.hpp>
#include <memory>
#include <string>
#include <vector>

#include "frontend/mcp_session_tasks.h"
#include "frontend/mcp_stateless.h"
#include "gateway/gateway.h"
#include "json/envelope.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

class McpHttp {
 public:
  explicit McpHttp(gateway::Gateway& gateway)
      : gateway_(gateway), stateless_(gateway), session_tasks_(gateway, stateless_) {}
  // The tasks of the MCP tasks extension (also those of /v1/batch mode "tasks").
  tasks::Store& task_store() { return stateless_.task_store(); }

  // `trajectory`: the name in a /t/NAME/mcp path (percent-decoded, unchecked), else empty;
  // `surface`: the name in a /s/NAME/mcp path (checked by the caller), else empty.
  boost::asio::awaitable<void> post(transport::Exchange& ex, std::string_view trajectory = {},
                                    std::string_view surface = {});
  boost::asio::awaitable<void> get(transport::Exchange& ex, std::string_view trajectory = {},
                                   std::string_view surface = {});
  boost::asio::awaitable<void> del(transport::Exchange& ex, std::string_view trajectory = {},
                                   std::string_view surface = {});

 private:
  // The messages of a POST body, each parsed once.
  struct Messages {
    bool batch = false;
    std::vector<std::string> texts;  // batch elements (a single message stays in the body)
    boost::container::small_vector<json::Envelope, 1> envelopes;  // one inline: the usual POST
    std::string error;  // the JSON-RPC error to answer with 400 instead
  };
  static Messages read_messages(const std::string& body);
  // The session a POST belongs to (a new one for initialize), or an error to answer.
  struct SessionOrError {
    std::shared_ptr<gateway::Session> session;
    transport::Headers headers;
    boost::beast::http::status status = boost::beast::http::status::ok;
    std::string error;
  };
  SessionOrError session_for(const transport::Exchange& ex, const Messages& m,
                             std::string_view body, std::string_view path_trajectory,
                             std::string_view path_surface);
  // A POST up to the wait for its answers: checked, its messages handed to the method table.
  struct Accepted {
    std::string error;  // the JSON-RPC error to answer with `status` instead
    boost::beast::http::status status = boost::beast::http::status::ok;
    transport::Headers headers;
    std::shared_ptr<gateway::Session> session;
    std::shared_ptr<gateway::PostStream> stream;
    std::shared_ptr<call::Call> call;  // the one call of a POST that is not a batch, to run
    bool batch = false;
    bool owed = false;  // some message is a request: answers are owed
    bool task = false;  // the one message is for session_tasks_ (not handed to the methods)
  };
  Accepted accept_post(const transport::Exchange& ex, std::string_view trajectory,
                       std::string_view surface);
  // Whether a GET or DELETE may use `session` under the trajectory and surface it names; or why
  // not.
  base::Status transport_refusal(const transport::Request& req, std::string_view path_trajectory,
                                 std::string_view path_surface,
                                 const gateway::Session& session) const;
  boost::asio::awaitable<void> answer(transport::Exchange& ex,
                                      std::shared_ptr<gateway::PostStream> stream, bool batch,
                                      const transport::Headers& headers);

  gateway::Gateway& gateway_;
  McpStateless stateless_;      // stateless (2026-07-28) requests on the same endpoint
  SessionTasks session_tasks_;  // tasks of 2025-11-25 sessions
};

}  // namespace toolbridge::frontend
