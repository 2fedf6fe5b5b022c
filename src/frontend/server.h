#pragma once
// The listener and its front ends: one HTTP server whose router sends /mcp to MCP Streamable
// HTTP, /sse and /messages to the legacy transport, /v1/batch and /v1/tools to the batch API,
// and /healthz, /metrics, /sessions to the admin endpoints — all in front of one gateway core.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "base/expected.h"
#include "frontend/admin.h"
#include "frontend/auth.h"
#include "frontend/batch.h"
#include "frontend/legacy_sse.h"
#include "frontend/mcp_http.h"
#include "frontend/observe.h"
#include "frontend/openai.h"
#include "frontend/origin_guard.h"
#include "frontend/parse.h"
#include "frontend/router.h"
#include "gateway/gateway.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

class Server {
 public:
  Server(boost::asio::io_context& io, config::Config config);

  // Binds the listener, then starts every server; fails (saying why) if it cannot bind.
  base::Status start();
  // Stops accepting, lets calls in flight finish (shutdown_grace), ends sessions, stops servers.
  boost::asio::awaitable<void> shutdown();

  // SIGHUP: reads gateway.tls's certificate and key again; an error keeps the old ones.
  base::Status reload_tls();
  bool tls() const { return http_.tls(); }

  unsigned short port() const { return http_.port(); }
  // The admin listener's port (gateway.admin_listen), 0 if there is none.
  unsigned short admin_port() const { return admin_http_ ? admin_http_->port() : 0; }
  gateway::Gateway& gateway() { return gateway_; }

 private:
  void add_routes();
  // gateway.admin_listen: /healthz, /metrics, /sessions/, /dashboard and /v1/trajectories on a
  // listener of their own, without a token.
  void add_admin_listener();
  void register_metrics();
  // /t/NAME/mcp and /t/NAME/sse: the MCP endpoints on behalf of trajectory NAME.
  boost::asio::awaitable<void> for_trajectory(transport::Exchange& ex, std::string_view path);
  // /s/NAME/mcp and /t/TRAJECTORY/s/NAME/mcp: the MCP endpoint showing tool surface NAME.
  boost::asio::awaitable<void> for_surface(transport::Exchange& ex, std::string_view path);
  // `handler` behind authentication when keys are configured (every path but /healthz). The
  // head check (Host, Origin: origin_guard.h) is in front of each listener's router.
  Handler guarded(Handler handler);

  gateway::Gateway gateway_;
  Auth auth_;
  McpHttp mcp_;
  LegacySse legacy_;
  Admin admin_;
  Batch batch_;
  Parse parse_;
  Observe observe_;
  OpenAi openai_;
  Router router_;
  OriginGuard guard_;
  transport::HttpServer http_;
  Router admin_router_;
  std::unique_ptr<transport::HttpServer> admin_http_;
};

}  // namespace toolbridge::frontend
