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

#include "gateway/gateway.h"
#include "gateway/session.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

class LegacySse {
 public:
  explicit LegacySse(gateway::Gateway& gateway) : gateway_(gateway) {}

  // GET /sse and POST /messages; anything else on these paths gets 405. `trajectory`: the name
  // in a /t/NAME/sse path (percent-decoded, unchecked), else empty.
  boost::asio::awaitable<void> handle(transport::Exchange& ex, std::string_view path,
                                      std::string_view trajectory = {});

 private:
  boost::asio::awaitable<void> open_stream(transport::Exchange& ex, std::string_view trajectory);
  boost::asio::awaitable<void> post_message(transport::Exchange& ex);
  // Waits for the answers owed to one POST and puts them on the session's stream.
  boost::asio::awaitable<void> deliver(std::shared_ptr<gateway::Session> session,
                                       std::shared_ptr<gateway::PostStream> stream);

  gateway::Gateway& gateway_;
};

}  // namespace toolbridge::frontend
