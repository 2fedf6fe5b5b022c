#pragma once
// The one HTTP/1.1 client of toolbridge (remote upstreams, `toolbridge stdio`, the CLI): a pool
// of keep-alive connections per origin, plain TCP or TLS, a time limit on every step, request
// bodies, and responses read whole or piece by piece (Server-Sent Events). A request that went
// out on an idle keep-alive connection the server had just closed is sent once more on a new
// one. Nothing throws: every failure is an HttpError whose message a person can act on.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/expected.h"
#include "transport/http_connection.h"
#include "transport/url.h"

namespace toolbridge::transport {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpClientOptions {
  TlsTrust tls;                                         // for https origins
  std::chrono::milliseconds connect_timeout{10'000};    // resolve + TCP connect
  std::chrono::milliseconds handshake_timeout{10'000};  // TLS handshake
  std::size_t max_connections = 16;  // busy pooled connections per origin; more requests wait
  std::size_t max_idle = 16;         // idle keep-alive connections kept per origin
  std::string user_agent = "toolbridge";
};

// How a request gets its connection.
enum class Lease {
  kPooled,     // an idle keep-alive one or a new one; waits while max_connections are busy
  kUnbounded,  // the same without waiting: short exchanges that must not queue (ending a session)
  kOwn,        // a new one outside the pool, closed afterwards (long-lived event streams)
};

struct HttpRequest {
  http::verb verb = http::verb::get;
  Url url;
  HeaderList headers;  // besides Host, User-Agent and Content-Length, which the client sets
  std::string body;
  Lease lease = Lease::kPooled;
  // Limits; kNoTimeout (zero) for none, where a deadline elsewhere bounds the wait.
  std::chrono::milliseconds write_timeout{30'000};
  std::chrono::milliseconds header_timeout{30'000};  // from the request written to its header
  std::chrono::milliseconds body_timeout{30'000};    // longest silence while reading the body
};

class HttpClientPool;

// One request on its way: written by HttpClient::send, then its header, then its body. The
// connection goes back to the pool as soon as the body has been read whole; dropping the
// exchange earlier closes it.
class HttpExchange {
 public:
  HttpExchange();
  HttpExchange(HttpExchange&&) noexcept;
  HttpExchange& operator=(HttpExchange&&) noexcept;
  ~HttpExchange();

  // Set when a step failed; later steps then fail at once with the same error.
  const HttpError& error() const;
  bool failed() const { return static_cast<bool>(error()); }
  // The request went out on a connection that had served one before.
  bool reused() const;

  boost::asio::awaitable<bool> read_header();
  int status() const;
  std::string reason() const;
  // A header of the response ("" when absent; names compare case-insensitively).
  std::string header(std::string_view name) const;
  HeaderList headers() const;
  bool keep_alive() const;

  // The next piece of the body, valid until the next call; empty when the body has ended
  // (done()) or a read failed (failed()).
  boost::asio::awaitable<std::string_view> read_some();
  // Appends the rest of the body to `out`. False when a read failed or the body exceeded `limit`
  // bytes (error() says which).
  boost::asio::awaitable<bool> read_body(std::string& out, std::size_t limit);
  bool done() const;

  // Abandons the exchange: its connection is closed, not reused, and later reads fail (kClosed)
  // unless the body had been read whole.
  void close();

  struct State;
  explicit HttpExchange(std::unique_ptr<State> state);

 private:
  std::unique_ptr<State> state_;
};

// A whole response (HttpClient::fetch).
struct HttpResponse {
  HttpError error;
  int status = 0;
  std::string reason;
  HeaderList headers;
  std::string body;
  std::string header(std::string_view name) const;
};

class HttpClient {
 public:
  HttpClient(boost::asio::any_io_executor ex, HttpClientOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Loads the trusted certificates for https origins (done on the first https request
  // otherwise), or says why they cannot be.
  base::Status prepare_tls();
  // Takes a connection as `request.lease` says and writes the request. The request is taken by
  // value: std::move it in and its body is sent without a copy.
  boost::asio::awaitable<HttpExchange> send(HttpRequest request);
  // send, read_header and read_body in one; a body over `body_limit` bytes is an error.
  boost::asio::awaitable<HttpResponse> fetch(HttpRequest request, std::size_t body_limit);
  // Closes every connection, idle or busy; exchanges in flight fail, later sends fail at once.
  void close();

  // Connections opened so far, and idle ones now (tests).
  std::size_t connections_opened() const;
  std::size_t idle_connections() const;

 private:
  std::shared_ptr<HttpClientPool> pool_;
};

}  // namespace toolbridge::transport
