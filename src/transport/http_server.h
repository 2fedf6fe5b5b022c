#pragma once
// HTTP/1.1 server on Boost.Beast: one coroutine per connection, keep-alive, TCP_NODELAY, a body
// cap (413), and responses either whole or streamed as chunks (for Server-Sent Events). Bounded
// without costing a call: at max_connections the server stops accepting (the kernel's backlog
// holds new connections) until one closes; a client over max_connections_per_client gets a whole
// 503 with Retry-After for its request; past 3/4 of either cap responses carry `Connection:
// close`, so idle keep-alive connections are shed the way HTTP/1.1 clients expect (an open idle
// connection is never closed under a client that may be reusing it). An idle timeout while
// waiting for a request and a write timeout for every response write are enforced by one
// periodic sweep instead of a timer operation per request.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"

namespace toolbridge::config {
struct ApiKey;
}
namespace boost::asio::ssl {
class context;
}

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
  // The peer's IP address as text ("127.0.0.1", "::1").
  virtual const std::string& client() const = 0;
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
  // `callback` runs (once, later, never inside this call) if the peer closes the connection
  // while the handler is still working on its answer: its calls can be cancelled upstream.
  virtual void on_peer_closed(std::function<void()> callback) = 0;

  // The API key the request was verified with (frontend/auth.h), null when authentication is
  // off. Set before the front end sees the request.
  const config::ApiKey* principal = nullptr;
  // The connection's last verified credential (the Authorization value and its key), so a
  // keep-alive connection pays one comparison instead of a hash per request. Null: not kept.
  struct Verified {
    std::string credential;
    const config::ApiKey* key = nullptr;
  };
  virtual Verified* verified() { return nullptr; }
};

using Handler = std::function<boost::asio::awaitable<void>(Exchange&)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  unsigned short port = 0;
  std::size_t max_body_bytes = 4u << 20;
  std::size_t max_header_bytes = 16u << 10;
  // Waiting for a request (keep-alive) or for the rest of one that has begun.
  std::chrono::milliseconds idle_timeout{120'000};
  // One response (or one chunk of a stream) not taken by the client within this closes it.
  std::chrono::milliseconds write_timeout{30'000};
  std::size_t max_connections = 16'384;
  std::size_t max_connections_per_client = 12'288;
  // Answer bytes held for clients that took none of their answer since the last sweep (stalled
  // writers), in all and per client address: over either, the stalled connections whose write
  // has waited longest are closed (write_timeout aside). A client that reads is never closed.
  std::size_t max_unread_bytes = 256u << 20;
  std::size_t max_unread_bytes_per_client = 64u << 20;
  // TLS (PEM files): both set, every connection is TLS; both empty, plain HTTP.
  std::string tls_cert_file;
  std::string tls_key_file;
};

class HttpServer {
 public:
  // `clock` times the sweep (idle, header and write timeouts) and the pause after a failed accept.
  HttpServer(boost::asio::io_context& io, HttpServerOptions options, Handler handler,
             const base::Clock& clock = base::steady_clock());
  ~HttpServer();
  // Binds and starts accepting, or says why it cannot.
  base::Status listen();
  // Reads the certificate and key again (SIGHUP): new connections use them, open ones keep
  // theirs. On an error the old ones stay and the message is returned.
  base::Status reload_tls();
  bool tls() const { return tls_ != nullptr; }
  unsigned short port() const { return port_; }
  const std::string& host() const { return options_.host; }
  const HttpServerOptions& options() const { return options_; }
  // Stops accepting new connections; open ones keep being served.
  void stop_accepting();
  // Stops accepting and closes every connection.
  void stop();
  std::size_t connections() const { return open_.size(); }
  // Connections refused (503), shed (closed after a response with `Connection: close` near a
  // cap), idle or write timeouts, since start; times the accept loop paused at max_connections.
  struct Counters {
    std::uint64_t refused = 0;
    std::uint64_t shed = 0;
    std::uint64_t accept_paused = 0;
    std::uint64_t idle_closed = 0;
    std::uint64_t write_timeouts = 0;
    std::uint64_t unread = 0;        // closed over max_unread_bytes(_per_client)
    std::uint64_t tls_failures = 0;  // TLS handshakes that failed (no common CA, not TLS, ...)
  };
  const Counters& counters() const { return counters_; }

  struct Connection;

 private:
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> serve(std::unique_ptr<Connection> conn);
  boost::asio::awaitable<bool> handshake(Connection& conn);
  // The connection is done: uncounted and its sending side shut.
  void finish(Connection& conn);
  // False if `client` holds max_connections_per_client connections.
  bool admit(const std::string& client) const;
  // Past 3/4 of either cap: the connection's next response closes it.
  bool crowded(const std::string& client) const;
  // The request of a connection over its client's cap, answered with 503.
  boost::asio::awaitable<void> refuse_request(Connection& conn, boost::beast::flat_buffer& buffer);
  void sweep();
  // The peer acknowledged nothing of `conn`'s write for `window` (sampled at each sweep).
  bool stalled(Connection& conn, base::Clock::duration window) const;
  std::chrono::milliseconds sweep_interval() const;
  // While the answers held are over max_unread_bytes: sweeps this often, and a writer is stalled
  // after this long without progress (a client that pauses reading for less is not closed).
  static constexpr std::chrono::milliseconds kOverSweep{100};
  static constexpr std::chrono::milliseconds kStallWhenOver{500};
  // Closes stalled writers (oldest first) while the bytes they hold are over a bound.
  void bound_unread(std::vector<Connection*>& writing);
  void schedule_sweep();
  void wait_for_sweep();
  // The answers held went over max_unread_bytes: the next sweep within kOverSweep.
  void hurry_sweep();
  void give_back_after_flood();

  boost::asio::io_context& io_;
  const base::Clock& clock_;
  HttpServerOptions options_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  Handler handler_;
  boost::asio::ip::tcp::acceptor acceptor_;
  base::Timer sweep_timer_;
  unsigned short port_ = 0;
  std::unordered_set<Connection*> open_;
  std::unordered_map<std::string, std::size_t> per_client_;
  Counters counters_;
  std::size_t live_ = 0;        // connections counted against the caps (refused ones are not)
  std::size_t refusing_ = 0;    // connections over their client's cap being answered 503
  bool accept_paused_ = false;  // at max_connections: finish() starts the accept loop again
  bool trim_ = false;           // writes were aborted: give their memory back at the next sweep
  std::size_t peak_open_ = 0;   // most connections open at once since memory was last given back
  // Time as of the last sweep: connections stamp their phase changes with it, so a request
  // costs no clock read and no timer operation.
  base::Clock::time_point now_;
  bool stopping_ = false;
};

}  // namespace toolbridge::transport
