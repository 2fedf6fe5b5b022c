#pragma once
// The 2024-11-05 HTTP+SSE transport, still used by clients built on `sse_client`:
// GET /sse opens a stream whose first event (`endpoint`) names POST /messages?sessionId=ID;
// each POST carries one JSON-RPC message and gets 202, and every answer, notification and server
// request travels on the stream. Sessions are ordinary gateway sessions; this class only adapts
// the transport, and ends the session when its stream closes.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "gateway/session.h"
#include "transport/http_server.h"

namespace toolbridge::gateway {

// What the transport needs from the gateway.
struct LegacyHooks {
  // A new session, or nullptr with `refused` set (HTTP 503: shutting down, max_sessions).
  std::function<std::shared_ptr<Session>(std::string& refused)> create_session;
  std::function<std::shared_ptr<Session>(std::string_view id)> find_session;
  // Ends the session as DELETE /mcp would: its calls are cancelled upstream, then it is forgotten.
  std::function<void(const std::shared_ptr<Session>&, const std::string& why)> end_session;
  // Handles one JSON-RPC message of the session, as a POST to /mcp would.
  std::function<void(const std::shared_ptr<Session>&, const std::shared_ptr<PostStream>&,
                     std::string_view)>
      dispatch;
  std::function<bool()> stopping;
};

class LegacySse {
 public:
  LegacySse(boost::asio::io_context& io, LegacyHooks hooks) : io_(io), hooks_(std::move(hooks)) {}

  // GET /sse and POST /messages; anything else on these paths gets 405.
  boost::asio::awaitable<void> handle(transport::Exchange& ex, std::string_view path);

 private:
  boost::asio::awaitable<void> open_stream(transport::Exchange& ex);
  boost::asio::awaitable<void> post_message(transport::Exchange& ex);
  // Waits for the answers owed to one POST and puts them on the session's stream.
  boost::asio::awaitable<void> deliver(std::shared_ptr<Session> session,
                                       std::shared_ptr<PostStream> stream);

  boost::asio::io_context& io_;
  LegacyHooks hooks_;
};

}  // namespace toolbridge::gateway
