#pragma once
// One HTTP/1.1 client connection, plain TCP or TLS, with a time limit on every step: connect,
// TLS handshake, write, read the header, read a piece of the body. Failures come back as an
// HttpError value naming the step, the peer and the reason.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "transport/url.h"

namespace toolbridge::transport {

namespace http = boost::beast::http;
using ResponseParser = http::response_parser<http::buffer_body>;
using OutgoingRequest = http::request<http::string_body>;
// No time limit (an event stream, or a wait bounded by a deadline elsewhere).
inline constexpr std::chrono::milliseconds kNoTimeout{0};

// Where an exchange failed. kNone: it did not.
enum class HttpStep {
  kNone,
  kTls,  // loading the trusted certificates
  kResolve,
  kConnect,
  kHandshake,
  kWrite,
  kReadHeader,
  kReadBody,
  kTooLong,  // the body passed the reader's limit
  kClosed,   // the client was closed
};

struct HttpError {
  HttpStep step = HttpStep::kNone;
  boost::system::error_code code;
  std::string message;  // a sentence: the step, the peer, the reason

  explicit operator bool() const { return step != HttpStep::kNone; }
  bool timed_out() const;
};

// The TLS side of a client: whose certificates are trusted, and whether they are checked.
struct TlsTrust {
  bool verify = true;
  std::string ca_file;  // PEM bundle trusted instead of the system's store
};

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  // `tls` set: an https connection. `origin` names the peer in messages.
  HttpConnection(const boost::asio::any_io_executor& ex, boost::asio::ssl::context* tls,
                 const Url& origin);

  // Resolves, connects (TCP_NODELAY) and, for https, shakes hands with SNI and, when
  // `verify_host`, a host name check. `connect_timeout` bounds resolving and connecting,
  // `handshake_timeout` the handshake. close() meanwhile ends it at once.
  boost::asio::awaitable<HttpError> connect(const Url& origin, bool verify_host,
                                            std::chrono::milliseconds connect_timeout,
                                            std::chrono::milliseconds handshake_timeout);

  boost::asio::awaitable<HttpError> write(OutgoingRequest& request,
                                          std::chrono::milliseconds limit);
  boost::asio::awaitable<HttpError> read_header(ResponseParser& parser,
                                                std::chrono::milliseconds limit);
  // Reads what has arrived into the parser (body bytes go to its buffer; a piece may hold none,
  // e.g. only a chunk header).
  boost::asio::awaitable<HttpError> read_some(ResponseParser& parser,
                                              std::chrono::milliseconds limit);

  bool is_open();
  // An idle keep-alive connection can serve another request only when nothing is waiting to be
  // read: end of file (the server closed it) or stray bytes both rule it out.
  bool reusable_when_idle();
  void close();
  const std::string& peer() const { return peer_; }

 private:
  boost::beast::tcp_stream& lowest();
  HttpError failure(HttpStep step, boost::system::error_code ec,
                    std::chrono::milliseconds limit) const;

  std::string peer_;                                          // host:port, for messages
  std::shared_ptr<boost::asio::ip::tcp::resolver> resolver_;  // while resolving
  bool closed_ = false;
  std::optional<boost::beast::tcp_stream> plain_;
  std::optional<boost::beast::ssl_stream<boost::beast::tcp_stream>> tls_;
  boost::beast::flat_buffer buffer_;
};

// "2 s", "150 ms": a limit as people read it.
std::string describe_limit(std::chrono::milliseconds limit);

}  // namespace toolbridge::transport
