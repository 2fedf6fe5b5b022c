#pragma once
// HTTP/1.1 server on Boost.Beast: one coroutine per connection, keep-alive, TCP_NODELAY, a body
// cap (413), and responses either whole or streamed as chunks (for Server-Sent Events). Bounded:
// connections in total and per client address (the longest-idle one makes room, else 503), an
// idle timeout while waiting for a request and a write timeout for every response write, both
// enforced by one periodic sweep instead of a timer operation per request.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

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
  std::size_t max_connections = 4096;
  std::size_t max_connections_per_client = 1024;
  // TLS (PEM files): both set, every connection is TLS; both empty, plain HTTP.
  std::string tls_cert_file;
  std::string tls_key_file;
};

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, HttpServerOptions options, Handler handler);
  ~HttpServer();
  // Binds and starts accepting. Returns an error message, empty on success.
  std::string listen();
  // Reads the certificate and key again (SIGHUP): new connections use them, open ones keep
  // theirs. On an error the old ones stay and the message is returned.
  std::string reload_tls();
  bool tls() const { return tls_ != nullptr; }
  unsigned short port() const { return port_; }
  const std::string& host() const { return options_.host; }
  const HttpServerOptions& options() const { return options_; }
  // Stops accepting new connections; open ones keep being served.
  void stop_accepting();
  // Stops accepting and closes every connection.
  void stop();
  std::size_t connections() const { return open_.size(); }
  // Connections refused (503) or closed to make room, idle or write timeouts, since start.
  struct Counters {
    std::uint64_t refused = 0;
    std::uint64_t evicted = 0;
    std::uint64_t idle_closed = 0;
    std::uint64_t write_timeouts = 0;
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
  // Makes room for a connection from `client`; false if every connection is busy.
  bool admit(const std::string& client);
  // Closes the longest-waiting keep-alive connection (of `client` if given); false if none.
  bool evict_idle(const std::string* client);
  void sweep();
  void schedule_sweep();
  void give_back_after_flood();

  boost::asio::io_context& io_;
  HttpServerOptions options_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  Handler handler_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer sweep_timer_;
  unsigned short port_ = 0;
  std::unordered_set<Connection*> open_;
  std::unordered_map<std::string, std::size_t> per_client_;
  Counters counters_;
  std::size_t live_ = 0;       // connections counted against the caps (evicted ones are not)
  std::size_t peak_open_ = 0;  // most connections open at once since memory was last given back
  // Time as of the last sweep: connections stamp their phase changes with it, so a request
  // costs no clock read and no timer operation.
  std::chrono::steady_clock::time_point now_;
  bool stopping_ = false;
};

}  // namespace toolbridge::transport
