#pragma once
// The listener and its front ends: one HTTP server whose router sends /mcp to MCP Streamable
// HTTP, /sse and /messages to the legacy transport, /v1/batch and /v1/tools to the batch API,
// and /healthz, /metrics, /sessions to the admin endpoints — all in front of one gateway core.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <string>

#include "frontend/admin.h"
#include "frontend/batch.h"
#include "frontend/observe.h"
#include "frontend/legacy_sse.h"
#include "frontend/mcp_http.h"
#include "frontend/openai.h"
#include "frontend/parse.h"
#include "frontend/router.h"
#include "gateway/gateway.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

class Server {
 public:
  Server(boost::asio::io_context& io, config::Config config);

  // Binds the listener, then starts every server. Returns an error message if it cannot bind.
  std::string start();
  // Stops accepting, lets calls in flight finish (shutdown_grace), ends sessions, stops servers.
  boost::asio::awaitable<void> shutdown();

  unsigned short port() const { return http_.port(); }
  gateway::Gateway& gateway() { return gateway_; }

 private:
  void add_routes();
  void register_metrics();
  // /t/NAME/mcp and /t/NAME/sse: the MCP endpoints on behalf of trajectory NAME.
  boost::asio::awaitable<void> for_trajectory(transport::Exchange& ex, std::string_view path);
  // `handler` behind the DNS-rebinding checks (Origin, Host).
  Handler guarded(Handler handler);

  gateway::Gateway gateway_;
  McpHttp mcp_;
  LegacySse legacy_;
  Admin admin_;
  Batch batch_;
  Parse parse_;
  Observe observe_;
  OpenAi openai_;
  Router router_;
  transport::HttpServer http_;
};

}  // namespace toolbridge::frontend
