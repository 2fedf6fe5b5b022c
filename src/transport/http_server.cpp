#include "transport/http_server.h"

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include "base/spawn.h"
#include "transport/http_server_connection.h"

namespace toolbridge::transport {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
namespace {

using Connection = HttpServer::Connection;

// One write or read on the connection, through TLS when it has it.
template <typename Buffers>
asio::awaitable<void> write_to(Connection& conn, const Buffers& buffers,
                               boost::system::error_code& ec) {
  if (conn.tls) {
    co_await asio::async_write(*conn.tls, buffers, asio::redirect_error(asio::use_awaitable, ec));
  } else {
    co_await asio::async_write(conn.socket, buffers, asio::redirect_error(asio::use_awaitable, ec));
  }
}

// One request read from the connection (through TLS when it has it) into `parser`.
asio::awaitable<void> read_from(Connection& conn, beast::flat_buffer& buffer,
                                http::request_parser<http::string_body>& parser,
                                boost::system::error_code& ec) {
  if (conn.tls) {
    co_await http::async_read(*conn.tls, buffer, parser,
                              asio::redirect_error(asio::use_awaitable, ec));
  } else {
    co_await http::async_read(conn.socket, buffer, parser,
                              asio::redirect_error(asio::use_awaitable, ec));
  }
}

bool header_safe(std::string_view text) {
  return text.find_first_of("\r\n") == text.npos;
}

// The status line and headers of a response, written by hand into the connection's reused
// buffer: Beast's fields and serializer cost more per call than the rest of the response path.
// `content_length` < 0: chunked (a stream).
void response_head(std::string& head, const Request& req, http::status status,
                   std::string_view content_type, const Headers& headers,
                   long long content_length) {
  head.clear();
  head += req.version() == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  head += std::to_string(static_cast<unsigned>(status));
  head += ' ';
  head += http::obsolete_reason(status);
  head += "\r\nServer: toolbridge\r\n";
  if (!content_type.empty() && header_safe(content_type)) {
    head += "Content-Type: ";
    head += content_type;
    head += "\r\n";
  }
  for (const auto& [name, value] : headers) {
    if (name.empty() || !header_safe(name) || !header_safe(value)) continue;
    head += name;
    head += ": ";
    head += value;
    head += "\r\n";
  }
  const bool keep_alive = req.keep_alive();
  if (req.version() == 10 && keep_alive) head += "Connection: keep-alive\r\n";
  if (req.version() != 10 && !keep_alive) head += "Connection: close\r\n";
  if (content_length < 0) {
    head += "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n";
  } else {
    head += "Content-Length: ";
    head += std::to_string(content_length);
    head += "\r\n";
  }
  head += "\r\n";
}

// The answer to a connection over its client's cap.
const std::string& refusal() {
  static const std::string kResponse = [] {
    const std::string body =
        R"j({"error":"too many connections from this address (gateway.max_connections_per_client)"})j";
    return "HTTP/1.1 503 Service Unavailable\r\nServer: toolbridge\r\nContent-Type: "
           "application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }();
  return kResponse;
}

// More connections than this being refused at once are refused without waiting for their
// request: written at once (the socket buffer takes it), what the client already sent read
// first so that the close is less likely a reset.
constexpr std::size_t kMaxRefusing = 256;
// A refused request's body is read (so that closing is not a reset) up to this size.
constexpr std::size_t kMaxRefusedBody = 64u << 10;

void refuse_now(tcp::socket& socket) {
  const std::string& response = refusal();
  const int fd = socket.native_handle();
  std::array<char, 4096> sink;
  for (int i = 0; i < 16 && ::recv(fd, sink.data(), sink.size(), MSG_DONTWAIT) > 0; ++i) {
  }
  [[maybe_unused]] const ssize_t n =
      ::send(fd, response.data(), response.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  boost::system::error_code ec;
  socket.shutdown(tcp::socket::shutdown_send, ec);
  socket.close(ec);
}

class BeastExchange final : public Exchange {
 public:
  BeastExchange(Connection& conn, Request& req, const SweepClock::time_point& now)
      : conn_(conn), req_(req), now_(now) {}

  const Request& request() const override { return req_; }
  const std::string& client() const override { return conn_.client; }

  // Not a coroutine: the head and body wait in the connection, and write_reply() is the only
  // frame a reply costs.
  asio::awaitable<void> reply(http::status status, std::string_view content_type, std::string body,
                              const Headers& headers) override {
    response_head(conn_.head, req_, status, content_type, headers,
                  static_cast<long long>(body.size()));
    conn_.body = std::move(body);
    replied_ = true;
    return write_reply();
  }

  asio::awaitable<bool> begin_stream(http::status status, std::string_view content_type,
                                     const Headers& headers) override {
    response_head(conn_.head, req_, status, content_type, headers, -1);
    const std::array<asio::const_buffer, 1> buffers{asio::buffer(conn_.head)};
    co_await write(buffers);
    replied_ = true;
    streaming_ = true;
    co_return !broken_;
  }

  asio::awaitable<bool> write_chunk(std::string data) override {
    if (broken_) co_return false;
    const auto chunk = http::make_chunk(asio::buffer(data));
    conn_.hold(data.size(), now_);
    co_await write(chunk);
    conn_.release();
    co_return !broken_;
  }

  asio::awaitable<void> end_stream() override {
    if (broken_ || !streaming_) co_return;
    const auto last = http::make_chunk_last();
    co_await write(last);
    streaming_ = false;
  }

  bool broken() const override { return broken_; }

  bool peer_closed() override {
    // A readable socket with nothing to read means the peer sent FIN. Pipelined bytes are not
    // expected while a stream is open, so peeking is enough.
    char c;
    const ssize_t n = ::recv(conn_.socket.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }

  void on_peer_closed(std::function<void()> callback) override {
    conn_.on_peer_closed = std::move(callback);
  }

  Verified* verified() override { return &conn_.verified; }

  bool replied() const { return replied_; }
  bool streaming() const { return streaming_; }

 private:
  // The write timeout is the sweep's: it closes a connection that stays in kWriting too long.
  template <typename Buffers>
  asio::awaitable<void> write(const Buffers& buffers) {
    if (broken_) co_return;
    conn_.phase = Connection::Phase::kWriting;
    conn_.since = now_;
    boost::system::error_code ec;
    co_await write_to(conn_, buffers, ec);
    conn_.phase = Connection::Phase::kHandling;
    conn_.since = now_;
    if (ec) broken_ = true;
  }

  // write() of the connection's head and body, with the socket's write awaited here directly.
  asio::awaitable<void> write_reply() {
    if (broken_) co_return;
    conn_.phase = Connection::Phase::kWriting;
    conn_.since = now_;
    const std::array<asio::const_buffer, 2> buffers{asio::buffer(conn_.head),
                                                    asio::buffer(conn_.body)};
    conn_.hold(conn_.head.size() + conn_.body.size(), now_);
    boost::system::error_code ec;
    if (conn_.tls) {
      co_await asio::async_write(*conn_.tls, buffers,
                                 asio::redirect_error(asio::use_awaitable, ec));
    } else {
      co_await asio::async_write(conn_.socket, buffers,
                                 asio::redirect_error(asio::use_awaitable, ec));
    }
    std::string().swap(conn_.body);
    conn_.release();
    conn_.phase = Connection::Phase::kHandling;
    conn_.since = now_;
    if (ec) broken_ = true;
  }

  Connection& conn_;
  Request& req_;
  const SweepClock::time_point& now_;
  bool replied_ = false;
  bool streaming_ = false;
  bool broken_ = false;
};

}  // namespace

HttpServer::HttpServer(asio::io_context& io, HttpServerOptions options, Handler handler,
                       const base::Clock& clock)
    : io_(io),
      clock_(clock),
      options_(std::move(options)),
      handler_(std::move(handler)),
      acceptor_(io),
      sweep_timer_(io, clock),
      now_(clock.now()) {
  base::held_answer_bytes().set_limit(options_.max_unread_bytes);
}

HttpServer::~HttpServer() {
  stop();
}

namespace {

// Asio keeps each socket's reactor state in a pool that it never frees. States made during a
// connection flood land between that flood's other blocks, which are freed when the connections
// close, and pin their pages: RSS stays up by a few KiB per connection the flood made. Making
// the states the connection cap needs before the first connection (then closing those sockets,
// which returns the states to the pool) puts them side by side, so a flood reuses them and what
// it frees can go back to the system.
void reserve_reactor_states(asio::io_context& io, std::size_t count) {
  std::vector<tcp::socket> sockets;
  sockets.reserve(count);
  boost::system::error_code ec;
  for (std::size_t i = 0; i < count; ++i) {
    tcp::socket s(io);
    s.open(tcp::v4(), ec);
    if (ec) break;  // out of file descriptors: what was made still helps
    sockets.push_back(std::move(s));
  }
}

}  // namespace

base::Status HttpServer::listen() {
  if (!options_.tls_cert_file.empty()) {
    if (base::Status loaded = reload_tls(); !loaded) return loaded;
  }
  boost::system::error_code ec;
  reserve_reactor_states(io_, options_.max_connections);
  std::string host = options_.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host == "localhost") host = "127.0.0.1";
  const auto address = asio::ip::make_address(host, ec);
  if (ec) return base::fail("invalid listen address '" + options_.host + "': " + ec.message());
  const tcp::endpoint ep(address, options_.port);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return base::fail("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                      ": " + ec.message());
  }
  port_ = acceptor_.local_endpoint().port();
  asio::co_spawn(io_, accept_loop(), base::log_failure("accept loop"));
  schedule_sweep();
  return {};
}

void HttpServer::stop_accepting() {
  boost::system::error_code ec;
  acceptor_.close(ec);
}

void HttpServer::stop() {
  if (stopping_) return;
  stopping_ = true;
  boost::system::error_code ec;
  acceptor_.close(ec);
  sweep_timer_.cancel();
  for (auto* c : open_) c->close();
}

bool HttpServer::admit(const std::string& client) const {
  const auto it = per_client_.find(client);
  return it == per_client_.end() || it->second < options_.max_connections_per_client;
}

bool HttpServer::crowded(const std::string& client) const {
  if (live_ * 4 >= options_.max_connections * 3) return true;
  const auto it = per_client_.find(client);
  return it != per_client_.end() && it->second * 4 >= options_.max_connections_per_client * 3;
}

asio::awaitable<void> HttpServer::accept_loop() {
  while (!stopping_) {
    if (live_ >= options_.max_connections) {
      // New connections wait in the kernel's backlog; finish() starts this loop again.
      if (counters_.accept_paused++ % 1000 == 0) {
        spdlog::warn("not accepting for now: {} connections open (gateway.max_connections)", live_);
      }
      accept_paused_ = true;
      co_return;
    }
    boost::system::error_code ec;
    tcp::socket socket =
        co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (stopping_ || ec == asio::error::operation_aborted || !acceptor_.is_open()) break;
      // EMFILE and friends: log, pause briefly, keep serving the connections we have.
      spdlog::warn("accept failed: {}", ec.message());
      base::Timer pause(io_, clock_, std::chrono::milliseconds(50));
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    const auto peer = socket.remote_endpoint(ec);
    std::string client = ec ? std::string("unknown") : peer.address().to_string();
    const bool admitted = admit(client);
    if (!admitted) {
      if (counters_.refused++ % 1000 == 0) {
        spdlog::warn("refusing connections from {}: {} open (gateway.max_connections_per_client)",
                     client, options_.max_connections_per_client);
      }
      if (refusing_ >= kMaxRefusing) {
        refuse_now(socket);
        continue;
      }
    }
    socket.set_option(tcp::no_delay(true), ec);
    // Counted here, not when the coroutine starts: the next accept must already see it.
    auto conn = std::make_unique<Connection>(std::move(socket), std::move(client));
    conn->server = this;
    conn->since = now_;
    conn->counted = admitted;
    if (admitted) {
      ++live_;
      ++per_client_[conn->client];
    } else {
      ++refusing_;
    }
    open_.insert(conn.get());
    peak_open_ = std::max(peak_open_, open_.size());
    asio::co_spawn(io_, serve(std::move(conn)), base::log_failure("HTTP connection"));
  }
}

asio::awaitable<void> HttpServer::serve(std::unique_ptr<Connection> owned) {
  Connection& conn = *owned;
  beast::flat_buffer buffer;
  // The handshake counts as waiting for a request: idle_timeout bounds it.
  if (tls_) {
    const bool secured = co_await handshake(conn);
    if (!secured) {
      finish(conn);
      co_return;
    }
  }
  if (!conn.counted) {
    co_await refuse_request(conn, buffer);
    finish(conn);
    co_return;
  }
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(options_.max_body_bytes);
    parser.header_limit(static_cast<std::uint32_t>(options_.max_header_bytes));
    conn.phase = Connection::Phase::kWaiting;
    conn.since = now_;
    boost::system::error_code ec;
    co_await read_from(conn, buffer, parser, ec);
    if (ec == http::error::body_limit || ec == http::error::header_limit) {
      const bool body = ec == http::error::body_limit;
      const std::string text = body ? "{\"error\":\"request body exceeds max_body_bytes (" +
                                          std::to_string(options_.max_body_bytes) + " bytes)\"}"
                                    : std::string(R"({"error":"request headers too large"})");
      const std::string head =
          std::string(body ? "HTTP/1.1 413 Payload Too Large\r\n"
                           : "HTTP/1.1 431 Request Header Fields Too Large\r\n") +
          "Server: toolbridge\r\nContent-Type: application/json\r\nConnection: close\r\n"
          "Content-Length: " +
          std::to_string(text.size()) + "\r\n\r\n" + text;
      conn.phase = Connection::Phase::kWriting;
      const asio::const_buffer buffer_of_head = asio::buffer(head);
      co_await write_to(conn, buffer_of_head, ec);
      break;
    }
    if (ec) break;  // closed, timed out, evicted, or not HTTP: nothing to answer
    Request req = parser.release();
    // Near a cap, this response closes the connection: the client opens a new one (or waits
    // for one of its others) instead of finding this one closed under its next request.
    if (req.keep_alive() && crowded(conn.client)) {
      req.keep_alive(false);
      ++counters_.shed;
    }
    conn.phase = Connection::Phase::kHandling;
    conn.since = now_;
    BeastExchange exchange(conn, req, now_);
    co_await handler_(exchange);
    conn.on_peer_closed = nullptr;
    if (!exchange.replied()) {
      co_await exchange.reply(http::status::internal_server_error, "text/plain",
                              std::string("no response\n"), {});
    } else if (exchange.streaming()) {
      co_await exchange.end_stream();
    }
    if (exchange.broken() || !req.keep_alive() || stopping_) break;
  }
  finish(conn);
}

void HttpServer::finish(Connection& conn) {
  open_.erase(&conn);
  if (conn.counted) {
    --live_;
    if (--per_client_[conn.client] == 0) per_client_.erase(conn.client);
  } else {
    --refusing_;
  }
  boost::system::error_code ec;
  conn.socket.shutdown(tcp::socket::shutdown_send, ec);
  if (accept_paused_ && !stopping_ && live_ < options_.max_connections) {
    accept_paused_ = false;
    asio::co_spawn(io_, accept_loop(), base::log_failure("accept loop"));
  }
}

asio::awaitable<void> HttpServer::refuse_request(Connection& conn, beast::flat_buffer& buffer) {
  // The request is read whole (a small body at most) so that closing after the answer is not
  // a reset of what the client sent; the sweep's idle timeout bounds the wait for it.
  http::request_parser<http::string_body> parser;
  parser.body_limit(kMaxRefusedBody);
  parser.header_limit(static_cast<std::uint32_t>(options_.max_header_bytes));
  conn.phase = Connection::Phase::kWaiting;
  conn.since = now_;
  boost::system::error_code ec;
  co_await read_from(conn, buffer, parser, ec);
  if (ec) co_return;
  conn.phase = Connection::Phase::kWriting;
  conn.since = now_;
  const asio::const_buffer answer = asio::buffer(refusal());
  co_await write_to(conn, answer, ec);
}

asio::awaitable<bool> HttpServer::handshake(Connection& conn) {
  conn.tls_context = tls_;
  conn.tls = std::make_unique<asio::ssl::stream<tcp::socket&>>(conn.socket, *conn.tls_context);
  conn.phase = Connection::Phase::kWaiting;
  conn.since = now_;
  boost::system::error_code ec;
  co_await conn.tls->async_handshake(asio::ssl::stream_base::server,
                                     asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    ++counters_.tls_failures;
    spdlog::debug("TLS handshake with {} failed: {}", conn.client, ec.message());
  }
  co_return !ec;
}

base::Status HttpServer::reload_tls() {
  const std::string& cert = options_.tls_cert_file;
  const std::string& key = options_.tls_key_file;
  if (cert.empty() || key.empty()) return base::fail("no TLS certificate is configured");
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  boost::system::error_code ec;
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                       asio::ssl::context::no_tlsv1_1,
                   ec);
  ctx->use_certificate_chain_file(cert, ec);
  if (ec) return base::fail("cannot use the TLS certificate '" + cert + "': " + ec.message());
  ctx->use_private_key_file(key, asio::ssl::context::pem, ec);
  if (ec) return base::fail("cannot use the TLS key '" + key + "': " + ec.message());
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1)
    return base::fail("the TLS key '" + key + "' does not belong to the certificate '" + cert +
                      "'");
  tls_ = std::move(ctx);
  return {};
}

}  // namespace toolbridge::transport
