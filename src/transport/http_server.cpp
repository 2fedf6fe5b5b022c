#include "transport/http_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>

namespace toolbridge::transport {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

namespace {

class BeastExchange final : public Exchange {
 public:
  BeastExchange(beast::tcp_stream& stream, Request& req) : stream_(stream), req_(req) {}

  const Request& request() const override { return req_; }

  asio::awaitable<void> reply(http::status status, std::string_view content_type, std::string body,
                              const Headers& headers) override {
    http::response<http::string_body> res{status, req_.version()};
    res.set(http::field::server, "toolbridge");
    if (!content_type.empty()) res.set(http::field::content_type, content_type);
    for (const auto& [k, v] : headers) res.set(k, v);
    res.keep_alive(req_.keep_alive());
    res.body() = std::move(body);
    res.prepare_payload();
    boost::system::error_code ec;
    stream_.expires_never();
    co_await http::async_write(stream_, res, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) broken_ = true;
    replied_ = true;
  }

  asio::awaitable<bool> begin_stream(http::status status, std::string_view content_type,
                                     const Headers& headers) override {
    http::response<http::empty_body> res{status, req_.version()};
    res.set(http::field::server, "toolbridge");
    res.set(http::field::content_type, content_type);
    res.set(http::field::cache_control, "no-cache");
    for (const auto& [k, v] : headers) res.set(k, v);
    res.keep_alive(req_.keep_alive());
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    boost::system::error_code ec;
    stream_.expires_never();
    co_await http::async_write_header(stream_, sr, asio::redirect_error(asio::use_awaitable, ec));
    replied_ = true;
    streaming_ = true;
    if (ec) broken_ = true;
    co_return !ec;
  }

  asio::awaitable<bool> write_chunk(std::string data) override {
    if (broken_) co_return false;
    boost::system::error_code ec;
    co_await asio::async_write(stream_, http::make_chunk(asio::buffer(data)),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) broken_ = true;
    co_return !ec;
  }

  asio::awaitable<void> end_stream() override {
    if (broken_ || !streaming_) co_return;
    boost::system::error_code ec;
    co_await asio::async_write(stream_, http::make_chunk_last(),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) broken_ = true;
    streaming_ = false;
  }

  bool broken() const override { return broken_; }

  bool peer_closed() override {
    // A readable socket with nothing to read means the peer sent FIN. Pipelined bytes are not
    // expected while a stream is open, so peeking is enough.
    auto& sock = stream_.socket();
    boost::system::error_code ec;
    const std::size_t avail = sock.available(ec);
    if (ec) return true;
    if (avail > 0) return false;
    char c;
    const ssize_t n = ::recv(sock.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }

  bool replied() const { return replied_; }
  bool streaming() const { return streaming_; }

 private:
  beast::tcp_stream& stream_;
  Request& req_;
  bool replied_ = false;
  bool streaming_ = false;
  bool broken_ = false;
};

}  // namespace

HttpServer::HttpServer(asio::io_context& io, HttpServerOptions options, Handler handler)
    : io_(io), options_(std::move(options)), handler_(std::move(handler)), acceptor_(io) {}

HttpServer::~HttpServer() { stop(); }

std::string HttpServer::listen() {
  boost::system::error_code ec;
  std::string host = options_.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") host = "127.0.0.1";
  const auto address = asio::ip::make_address(host, ec);
  if (ec) return "invalid listen address '" + options_.host + "': " + ec.message();
  const tcp::endpoint ep(address, options_.port);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return "cannot listen on " + options_.host + ":" + std::to_string(options_.port) + ": " +
           ec.message();
  }
  port_ = acceptor_.local_endpoint().port();
  asio::co_spawn(io_, accept_loop(), asio::detached);
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
  for (auto* s : open_) {
    s->shutdown(tcp::socket::shutdown_both, ec);
    s->close(ec);
  }
}

asio::awaitable<void> HttpServer::accept_loop() {
  while (!stopping_) {
    boost::system::error_code ec;
    tcp::socket socket = co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (stopping_ || ec == asio::error::operation_aborted || !acceptor_.is_open()) break;
      // EMFILE and friends: log, pause briefly, keep serving the connections we have.
      spdlog::warn("accept failed: {}", ec.message());
      asio::steady_timer pause(io_, std::chrono::milliseconds(50));
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    asio::co_spawn(io_, serve(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> HttpServer::serve(tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  auto* raw = &stream.socket();
  open_.insert(raw);
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(options_.max_body_bytes);
    parser.header_limit(static_cast<std::uint32_t>(options_.max_header_bytes));
    stream.expires_after(options_.idle_timeout);
    boost::system::error_code ec;
    co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == http::error::body_limit || ec == http::error::header_limit) {
      const bool body = ec == http::error::body_limit;
      http::response<http::string_body> res{body ? http::status::payload_too_large
                                                 : http::status::request_header_fields_too_large,
                                            11};
      res.set(http::field::content_type, "application/json");
      res.set(http::field::connection, "close");
      res.body() = body ? "{\"error\":\"request body exceeds max_body_bytes (" +
                              std::to_string(options_.max_body_bytes) + " bytes)\"}"
                        : std::string(R"({"error":"request headers too large"})");
      res.prepare_payload();
      co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
      break;
    }
    if (ec) break;  // closed, timed out, or not HTTP: nothing to answer
    Request req = parser.release();
    BeastExchange exchange(stream, req);
    co_await handler_(exchange);
    if (!exchange.replied()) {
      co_await exchange.reply(http::status::internal_server_error, "text/plain", std::string("no response\n"), {});
    } else if (exchange.streaming()) {
      co_await exchange.end_stream();
    }
    if (exchange.broken() || !req.keep_alive() || stopping_) break;
  }
  open_.erase(raw);
  boost::system::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
}

}  // namespace toolbridge::transport
