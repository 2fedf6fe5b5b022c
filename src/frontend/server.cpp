#include "frontend/server.h"

#include <boost/beast/http.hpp>

#include "frontend/origin_guard.h"
#include "json/envelope.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using transport::Exchange;

Server::Server(asio::io_context& io, config::Config config)
    : gateway_(io, std::move(config)),
      mcp_(gateway_),
      legacy_(gateway_),
      admin_(gateway_),
      http_(io,
            transport::HttpServerOptions{gateway_.config().gateway.host,
                                         gateway_.config().gateway.port,
                                         gateway_.config().gateway.max_body_bytes},
            [this](Exchange& ex) { return router_.route(ex); }) {
  add_routes();
}

void Server::add_routes() {
  router_.add(http::verb::get, "/mcp",
              guarded([this](Exchange& ex, std::string_view) { return mcp_.get(ex); }));
  router_.add(http::verb::post, "/mcp",
              guarded([this](Exchange& ex, std::string_view) { return mcp_.post(ex); }));
  router_.add(http::verb::delete_, "/mcp",
              guarded([this](Exchange& ex, std::string_view) { return mcp_.del(ex); }));
  for (const char* path : {"/sse", "/messages"}) {
    router_.add(std::nullopt, path, guarded([this](Exchange& ex, std::string_view p) {
                  return legacy_.handle(ex, p);
                }));
  }
  router_.add(http::verb::get, "/healthz",
              [this](Exchange& ex, std::string_view) { return admin_.health(ex); });
  router_.add(http::verb::get, "/metrics",
              [this](Exchange& ex, std::string_view) { return admin_.metrics(ex); });
  router_.add(
      std::nullopt, "/sessions/",
      [this](Exchange& ex, std::string_view p) { return admin_.release(ex, p); }, true);
  router_.fallback([this](Exchange& ex, std::string_view) { return admin_.not_found(ex); });
}

Handler Server::guarded(Handler handler) {
  return [this, handler = std::move(handler)](Exchange& ex,
                                              std::string_view path) -> asio::awaitable<void> {
    const std::string refusal = rebinding_refusal(ex.request(), gateway_.config().gateway);
    if (!refusal.empty()) {
      const std::string body = json::make_error({}, json::kInvalidRequest, refusal);
      co_await ex.reply(http::status::forbidden, "application/json", body, {});
      co_return;
    }
    co_await handler(ex, path);
  };
}

std::string Server::start() {
  if (std::string err = http_.listen(); !err.empty()) return err;
  gateway_.start();
  return {};
}

asio::awaitable<void> Server::shutdown() {
  if (gateway_.stopping()) co_return;
  gateway_.begin_stop();
  http_.stop_accepting();
  // Calls in flight may finish (their answers still reach the agents) for up to shutdown_grace.
  co_await gateway_.drain();
  http_.stop();
  co_await gateway_.stop_servers();
}

}  // namespace toolbridge::frontend
