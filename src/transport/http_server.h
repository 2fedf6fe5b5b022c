#pragma once
// HTTP/1.1 server on Boost.Beast: one coroutine per connection, keep-alive, TCP_NODELAY, a body
// cap (413), and responses either whole or streamed as chunks (for Server-Sent Events).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace toolbridge::transport {

namespace http = boost::beast::http;
using Request = http::request<http::string_body>;
using Headers = std::vector<std::pair<std::string, std::string>>;

// One request and its response. A handler either calls reply() once, or begin_stream(), any
// number of write_chunk(), then end_stream().
class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual const Request& request() const = 0;
  virtual boost::asio::awaitable<void> reply(http::status status, std::string_view content_type,
                                             std::string body, const Headers& headers = {}) = 0;
  virtual boost::asio::awaitable<bool> begin_stream(http::status status,
                                                    std::string_view content_type,
                                                    const Headers& headers = {}) = 0;
  virtual boost::asio::awaitable<bool> write_chunk(std::string data) = 0;
  virtual boost::asio::awaitable<void> end_stream() = 0;
  // The connection is gone (a write failed); a streaming handler should return.
  virtual bool broken() const = 0;
  // The peer closed its side; checked on demand (e.g. by long-lived GET streams).
  virtual bool peer_closed() = 0;
};

using Handler = std::function<boost::asio::awaitable<void>(Exchange&)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  unsigned short port = 0;
  std::size_t max_body_bytes = 4u << 20;
  std::size_t max_header_bytes = 16u << 10;
  std::chrono::seconds idle_timeout{120};  // keep-alive connection with no request
};

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, HttpServerOptions options, Handler handler);
  ~HttpServer();
  // Binds and starts accepting. Returns an error message, empty on success.
  std::string listen();
  unsigned short port() const { return port_; }
  const std::string& host() const { return options_.host; }
  // Stops accepting new connections; open ones keep being served.
  void stop_accepting();
  // Stops accepting and closes every connection.
  void stop();
  std::size_t connections() const { return open_.size(); }

 private:
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket);

  boost::asio::io_context& io_;
  HttpServerOptions options_;
  Handler handler_;
  boost::asio::ip::tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::unordered_set<boost::asio::ip::tcp::socket*> open_;
  bool stopping_ = false;
};

}  // namespace toolbridge::transport
