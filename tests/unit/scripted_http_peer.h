#pragma once
// A scripted HTTP/1.1 server for client tests: it listens on 127.0.0.1 port 0 and runs a
// coroutine per accepted connection that reads requests and writes raw bytes, so a test decides
// exactly what the client sees (chunk boundaries, stalls, closes). Optionally over TLS.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace toolbridge::testing {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

// Bytes read from one connection: requests are cut out of it one at a time.
template <class Stream>
struct PeerConn {
  Stream& stream;
  std::string buffer;

  // One request (head and Content-Length body); nullopt when the client closed first.
  asio::awaitable<std::optional<std::string>> read_request() {
    error_code ec;
    const std::size_t head =
        co_await asio::async_read_until(stream, asio::dynamic_buffer(buffer), "\r\n\r\n",
                                        asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return std::nullopt;
    std::size_t length = 0;
    const std::string lower = lowercase(buffer.substr(0, head));
    if (auto at = lower.find("\r\ncontent-length:"); at != std::string::npos) {
      length = std::strtoul(lower.c_str() + at + 17, nullptr, 10);
    }
    while (buffer.size() < head + length) {
      char more[64 * 1024];
      const std::size_t n = co_await stream.async_read_some(
          asio::buffer(more), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return std::nullopt;
      buffer.append(more, n);
    }
    std::string request = buffer.substr(0, head + length);
    buffer.erase(0, head + length);
    co_return request;
  }

  // (Pass a named string: GCC 12 mishandles temporaries inside co_await expressions.)
  asio::awaitable<bool> write(const std::string& bytes) {
    error_code ec;
    co_await asio::async_write(stream, asio::buffer(bytes),
                               asio::redirect_error(asio::use_awaitable, ec));
    co_return !ec;
  }

  static std::string lowercase(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }
};

using PlainConn = PeerConn<tcp::socket>;
using TlsConn = PeerConn<asio::ssl::stream<tcp::socket>>;

inline std::string ok_response(const std::string& body, const std::string& extra = "") {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + extra + "\r\n" + body;
}

inline asio::awaitable<void> pause(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  error_code ec;
  co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

class ScriptedPeer {
 public:
  // `n` counts connections from 0.
  using PlainScript = std::function<asio::awaitable<void>(PlainConn&, int n)>;
  using TlsScript = std::function<asio::awaitable<void>(TlsConn&, int n)>;

  ScriptedPeer(asio::io_context& io, PlainScript script) : io_(io), plain_(std::move(script)) {
    listen();
  }
  ScriptedPeer(asio::io_context& io, asio::ssl::context& tls, TlsScript script)
      : io_(io), tls_ctx_(&tls), tls_(std::move(script)) {
    listen();
  }
  ~ScriptedPeer() { stop(); }

  unsigned short port() const { return port_; }
  std::string url(const std::string& scheme = "http", const std::string& host = "127.0.0.1",
                  const std::string& path = "/mcp") const {
    return scheme + "://" + host + ":" + std::to_string(port_) + path;
  }
  int accepted() const { return *accepted_; }
  void stop() {
    error_code ec;
    acceptor_->close(ec);
  }

 private:
  void listen() {
    acceptor_ =
        std::make_shared<tcp::acceptor>(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port_ = acceptor_->local_endpoint().port();
    asio::co_spawn(io_, accept_loop(acceptor_, accepted_, tls_ctx_, plain_, tls_), asio::detached);
  }

  // Static with shared state: the loop may outlive the peer object by one wake-up.
  static asio::awaitable<void> accept_loop(std::shared_ptr<tcp::acceptor> acceptor,
                                           std::shared_ptr<int> accepted,
                                           asio::ssl::context* tls_ctx, PlainScript plain,
                                           TlsScript tls) {
    for (;;) {
      error_code ec;
      tcp::socket s =
          co_await acceptor->async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      const int n = (*accepted)++;
      auto ex = co_await asio::this_coro::executor;
      if (tls_ctx) {
        asio::co_spawn(ex, serve_tls(std::move(s), *tls_ctx, tls, n), asio::detached);
      } else {
        asio::co_spawn(ex, serve_plain(std::move(s), plain, n), asio::detached);
      }
    }
  }
  static asio::awaitable<void> serve_plain(tcp::socket s, PlainScript script, int n) {
    PlainConn c{s, {}};
    co_await script(c, n);
  }
  static asio::awaitable<void> serve_tls(tcp::socket s, asio::ssl::context& ctx, TlsScript script,
                                         int n) {
    asio::ssl::stream<tcp::socket> stream(std::move(s), ctx);
    error_code ec;
    co_await stream.async_handshake(asio::ssl::stream_base::server,
                                    asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;
    TlsConn c{stream, {}};
    co_await script(c, n);
  }

  asio::io_context& io_;
  asio::ssl::context* tls_ctx_ = nullptr;
  PlainScript plain_;
  TlsScript tls_;
  std::shared_ptr<tcp::acceptor> acceptor_;
  std::shared_ptr<int> accepted_ = std::make_shared<int>(0);
  unsigned short port_ = 0;
};

// Runs `body` on `io` to completion (or until `limit`, which fails the test's expectations).
inline bool run_until_done(asio::io_context& io, asio::awaitable<void> body,
                           std::chrono::seconds limit = std::chrono::seconds(20)) {
  bool done = false;
  asio::co_spawn(io, std::move(body), [&](std::exception_ptr e) {
    if (e) ADD_FAILURE() << "the test coroutine threw";
    done = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    io.run_one_for(std::chrono::milliseconds(100));
  }
  return done;
}

}  // namespace toolbridge::testing
