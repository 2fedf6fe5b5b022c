#pragma once
// Serves mcp::Server over Streamable HTTP (POST/GET/DELETE on /mcp), one Server per session, so
// the fixture can be tested as an HTTP server without the gateway. Messages a tool sends while
// it runs (progress, logs, sampling, elicitation) go out on the SSE stream of the POST that
// carried the call; messages tied to no request go to the session's GET stream.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mcp/server.h"
#include "transport/http_server.h"

namespace toolbridge::mcp {

using ServerFactory = std::function<std::unique_ptr<Server>()>;

class HttpHost {
 public:
  HttpHost(boost::asio::io_context& io, transport::HttpServerOptions options,
           ServerFactory factory);
  ~HttpHost();
  // Binds; returns an error message, empty on success.
  std::string listen();
  unsigned short port() const { return http_.port(); }

 private:
  struct Stream;
  struct Session;
  boost::asio::awaitable<void> handle(transport::Exchange& ex);
  boost::asio::awaitable<void> handle_post(transport::Exchange& ex);
  boost::asio::awaitable<void> handle_get(transport::Exchange& ex,
                                          std::shared_ptr<Session> session);
  boost::asio::awaitable<void> stream_answer(transport::Exchange& ex,
                                             std::shared_ptr<Stream> stream, bool accepts_sse,
                                             const transport::Headers& headers);
  std::shared_ptr<Session> new_session();

  boost::asio::io_context& io_;
  ServerFactory factory_;
  transport::HttpServer http_;
  bool loopback_;
  std::map<std::string, std::shared_ptr<Session>, std::less<>> sessions_;
  // Deleted sessions stay allocated: their tool coroutines may still be running.
  std::vector<std::shared_ptr<Session>> ended_;
};

}  // namespace toolbridge::mcp
