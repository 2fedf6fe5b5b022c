#include "transport/http_connection.h"

#include <fmt/format.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <cerrno>

#include "base/clock.h"

namespace toolbridge::transport {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

bool HttpError::timed_out() const {
  return code == beast::error::timeout;
}

std::string describe_limit(std::chrono::milliseconds limit) {
  const auto ms = limit.count();
  if (ms % 1000 == 0) return fmt::format("{} s", ms / 1000);
  return fmt::format("{} ms", ms);
}

namespace {
void arm(beast::tcp_stream& s, std::chrono::milliseconds limit) {
  if (limit > kNoTimeout) {
    s.expires_after(limit);
  } else {
    s.expires_never();
  }
}

std::string peer_of(const Url& origin) {
  const bool ipv6 = origin.host.find(':') != std::string::npos;
  return (ipv6 ? "[" + origin.host + "]" : origin.host) + ":" + origin.port;
}
}  // namespace

HttpConnection::HttpConnection(const asio::any_io_executor& ex, ssl::context* tls,
                               const Url& origin)
    : peer_(peer_of(origin)) {
  if (tls) {
    tls_.emplace(ex, *tls);
  } else {
    plain_.emplace(ex);
  }
}

asio::awaitable<HttpError> HttpConnection::connect(const Url& origin, bool verify_host,
                                                   std::chrono::milliseconds connect_timeout,
                                                   std::chrono::milliseconds handshake_timeout) {
  auto self = shared_from_this();
  const auto ex = lowest().get_executor();
  // Name resolution has no stream timer: a timer cancels it instead. Like the stream's own
  // timers (Beast's), it waits real time: what it bounds is the network.
  resolver_ = std::make_shared<tcp::resolver>(ex);
  base::Timer resolve_limit(ex, base::steady_clock());
  if (connect_timeout > kNoTimeout) {
    resolve_limit.expires_after(connect_timeout);
    resolve_limit.async_wait([resolver = resolver_](error_code ec) {
      if (!ec) resolver->cancel();
    });
  }
  error_code ec;
  const tcp::resolver::results_type results = co_await resolver_->async_resolve(
      origin.host, origin.port, asio::redirect_error(asio::use_awaitable, ec));
  resolve_limit.cancel();
  resolver_.reset();
  if (closed_) ec = asio::error::operation_aborted;
  if (ec) {
    const std::string reason = ec == asio::error::operation_aborted && !closed_
                                   ? "no answer within " + describe_limit(connect_timeout)
                                   : ec.message();
    co_return HttpError{HttpStep::kResolve, ec,
                        fmt::format("cannot resolve {}: {}", origin.host, reason)};
  }
  beast::tcp_stream& s = lowest();
  arm(s, connect_timeout);
  co_await s.async_connect(results, asio::redirect_error(asio::use_awaitable, ec));
  if (closed_) ec = asio::error::operation_aborted;
  if (ec) co_return failure(HttpStep::kConnect, ec, connect_timeout);
  s.socket().set_option(tcp::no_delay(true), ec);
  if (tls_) {
    // SNI, and the certificate must name the host we asked for.
    SSL_set_tlsext_host_name(tls_->native_handle(), origin.host.c_str());
    if (verify_host) tls_->set_verify_callback(ssl::host_name_verification(origin.host));
    arm(s, handshake_timeout);
    co_await tls_->async_handshake(ssl::stream_base::client,
                                   asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      close();
      co_return failure(HttpStep::kHandshake, ec, handshake_timeout);
    }
  }
  s.expires_never();
  co_return HttpError{};
}

asio::awaitable<HttpError> HttpConnection::write(OutgoingRequest& request,
                                                 std::chrono::milliseconds limit) {
  auto self = shared_from_this();  // a close() elsewhere must not free us mid-operation
  error_code ec;
  arm(lowest(), limit);
  if (tls_) {
    co_await http::async_write(*tls_, request, asio::redirect_error(asio::use_awaitable, ec));
  } else {
    co_await http::async_write(*plain_, request, asio::redirect_error(asio::use_awaitable, ec));
  }
  if (is_open()) lowest().expires_never();
  if (ec) co_return failure(HttpStep::kWrite, ec, limit);
  co_return HttpError{};
}

asio::awaitable<HttpError> HttpConnection::read_header(ResponseParser& parser,
                                                       std::chrono::milliseconds limit) {
  auto self = shared_from_this();  // a close() elsewhere must not free us mid-operation
  error_code ec;
  arm(lowest(), limit);
  if (tls_) {
    co_await http::async_read_header(*tls_, buffer_, parser,
                                     asio::redirect_error(asio::use_awaitable, ec));
  } else {
    co_await http::async_read_header(*plain_, buffer_, parser,
                                     asio::redirect_error(asio::use_awaitable, ec));
  }
  if (is_open()) lowest().expires_never();
  if (ec) co_return failure(HttpStep::kReadHeader, ec, limit);
  co_return HttpError{};
}

asio::awaitable<HttpError> HttpConnection::read_some(ResponseParser& parser,
                                                     std::chrono::milliseconds limit) {
  auto self = shared_from_this();  // a close() elsewhere must not free us mid-operation
  error_code ec;
  arm(lowest(), limit);
  if (tls_) {
    co_await http::async_read_some(*tls_, buffer_, parser,
                                   asio::redirect_error(asio::use_awaitable, ec));
  } else {
    co_await http::async_read_some(*plain_, buffer_, parser,
                                   asio::redirect_error(asio::use_awaitable, ec));
  }
  if (is_open()) lowest().expires_never();
  // need_buffer: the piece filled the caller's buffer, which is not a failure.
  if (ec && ec != http::error::need_buffer) co_return failure(HttpStep::kReadBody, ec, limit);
  co_return HttpError{};
}

beast::tcp_stream& HttpConnection::lowest() {
  return tls_ ? beast::get_lowest_layer(*tls_) : *plain_;
}

bool HttpConnection::is_open() {
  return !closed_ && lowest().socket().is_open();
}

bool HttpConnection::reusable_when_idle() {
  if (!is_open() || buffer_.size() > 0) return false;
  char byte;
  const ssize_t n = ::recv(lowest().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

void HttpConnection::close() {
  closed_ = true;
  if (resolver_) resolver_->cancel();
  error_code ec;
  lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
  lowest().socket().close(ec);
}

HttpError HttpConnection::failure(HttpStep step, error_code ec,
                                  std::chrono::milliseconds limit) const {
  const bool timeout = ec == beast::error::timeout;
  const std::string within = timeout ? "no answer within " + describe_limit(limit) : ec.message();
  std::string message;
  switch (step) {
    case HttpStep::kConnect:
      message = fmt::format("cannot connect to {}: {}", peer_, within);
      break;
    case HttpStep::kHandshake:
      message = fmt::format("TLS handshake with {} failed: {}", peer_, within);
      break;
    case HttpStep::kWrite:
      message = timeout ? fmt::format("cannot send to {}: not written within {}", peer_,
                                      describe_limit(limit))
                        : fmt::format("cannot send to {}: {}", peer_, ec.message());
      break;
    case HttpStep::kReadHeader:
      message = timeout ? fmt::format("{} did not answer within {}", peer_, describe_limit(limit))
                        : fmt::format("the connection to {} broke before it answered ({})", peer_,
                                      ec.message());
      break;
    default:
      message = timeout ? fmt::format("{} sent nothing for {} during its answer", peer_,
                                      describe_limit(limit))
                        : fmt::format("the connection to {} broke during its answer ({})", peer_,
                                      ec.message());
  }
  return {step, ec, std::move(message)};
}

}  // namespace toolbridge::transport
