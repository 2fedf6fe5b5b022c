#include "upstream/remote.h"

#include <fmt/format.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/json.hpp>
#include <boost/url.hpp>
#include <cerrno>
#include <limits>
#include <optional>

#include "json/envelope.h"
#include "transport/sse_reader.h"

namespace toolbridge::upstream {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using Parser = http::response_parser<http::buffer_body>;

namespace {
constexpr long kDefaultRetryMs = 1'000;  // SSE reconnection delay when the server names none
constexpr int kMaxResumes = 5;           // Last-Event-ID reconnections for one request
constexpr std::size_t kErrorBodyBytes = 300;

std::string host_header(const std::string& host, const std::string& port, bool tls) {
  const bool ipv6 = host.find(':') != std::string::npos;
  std::string h = ipv6 ? "[" + host + "]" : host;
  if (port != (tls ? "443" : "80")) h += ":" + port;
  return h;
}
}  // namespace

struct Remote::Conn {
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
  bool is_open() { return lowest().socket().is_open(); }
  // An idle keep-alive connection the server has closed reads as end of file right away.
  bool closed_by_peer() {
    char byte;
    const ssize_t n = ::recv(lowest().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }
  void close() {
    error_code ec;
    lowest().socket().close(ec);
  }
};

// Stream-type dispatch for the three operations an exchange needs.
static asio::awaitable<error_code> do_write(Remote::Conn& c, http::request<http::string_body>& req);
static asio::awaitable<error_code> do_read_header(Remote::Conn& c, Parser& p);
static asio::awaitable<error_code> do_read_some(Remote::Conn& c, Parser& p);

Remote::Remote(asio::io_context& io, const config::Server& server, Handlers handlers)
    : io_(io),
      server_(server),
      handlers_(std::move(handlers)),
      slot_free_(io, asio::steady_timer::time_point::max()),
      endpoint_known_(io, asio::steady_timer::time_point::max()) {}

Remote::~Remote() = default;

std::string Remote::open() {
  auto parsed = boost::urls::parse_uri(server_.url);
  if (!parsed) return "invalid URL '" + server_.url + "': " + parsed.error().message();
  tls_ = parsed->scheme() == "https";
  if (!tls_ && parsed->scheme() != "http")
    return "'" + server_.url + "' is not http:// or https://";
  base_.host = std::string(parsed->host_address());
  if (base_.host.size() > 2 && base_.host.front() == '[') {
    base_.host = base_.host.substr(1, base_.host.size() - 2);
  }
  base_.port = parsed->has_port() ? std::string(parsed->port()) : tls_ ? "443" : "80";
  base_.target = std::string(parsed->encoded_target());
  if (base_.target.empty()) base_.target = "/";
  if (server_.transport == config::RemoteTransport::kStreamableHttp) mode_ = Mode::kStreamable;
  if (server_.transport == config::RemoteTransport::kSse) mode_ = Mode::kLegacy;
  if (tls_) {
    ssl_ = std::make_unique<ssl::context>(ssl::context::tls_client);
    error_code ec;
    if (server_.tls_verify) {
      if (server_.ca_file.empty()) {
        ssl_->set_default_verify_paths(ec);
      } else {
        ssl_->load_verify_file(server_.ca_file, ec);
      }
      if (ec) {
        return "cannot load trusted certificates" +
               (server_.ca_file.empty() ? std::string() : " from '" + server_.ca_file + "'") +
               ": " + ec.message();
      }
      ssl_->set_verify_mode(ssl::verify_peer);
    } else {
      ssl_->set_verify_mode(ssl::verify_none);
    }
  }
  if (mode_ == Mode::kLegacy) {
    asio::co_spawn(
        io_, [self = shared_from_this()]() { return self->legacy_stream(); }, asio::detached);
  }
  return {};
}

std::string Remote::transport_name() const {
  return mode_ == Mode::kLegacy ? "sse" : "streamable_http";
}

std::string Remote::where() const {
  return server_.url;
}

void Remote::send(std::string message, std::uint64_t call_id) {
  if (closed_ || failed_) return;
  Outgoing m;
  const json::Envelope env = json::parse_envelope(message);
  if (env.kind == json::Kind::kRequest) {
    m.id = std::string(env.id.in(message));
    m.initialize = env.method == "initialize";
  }
  m.body = std::move(message);
  m.call_id = call_id;
  queue_.push_back(std::move(m));
  if (sending_) return;
  sending_ = true;
  asio::co_spawn(
      io_, [self = shared_from_this()]() { return self->send_loop(); }, asio::detached);
}

void Remote::set_protocol_version(std::string version) {
  protocol_version_ = std::move(version);
  if (mode_ == Mode::kStreamable && !closed_) {
    asio::co_spawn(
        io_,
        [self = shared_from_this()]() {
          return self->get_stream(std::string(), kDefaultRetryMs, std::string());
        },
        asio::detached);
  }
}

asio::awaitable<void> Remote::end_session(std::chrono::milliseconds limit) {
  if (mode_ != Mode::kStreamable || session_id_.empty() || closed_ || failed_) co_return;
  auto self = shared_from_this();
  Running running(*this);
  std::shared_ptr<Conn> c;
  while (!idle_.empty() && !c) {
    c = std::move(idle_.back());
    idle_.pop_back();
    if (!c->is_open() || c->closed_by_peer()) c.reset();
  }
  if (!c) {
    std::string error;
    c = co_await connect(error);
    if (!c) co_return;
  }
  http::request<http::string_body> req{http::verb::delete_, base_.target, 11};
  req.set(http::field::host, host_header(base_.host, base_.port, tls_));
  req.set(http::field::user_agent, "toolbridge");
  req.set("Mcp-Session-Id", session_id_);
  if (!protocol_version_.empty()) req.set("MCP-Protocol-Version", protocol_version_);
  for (const auto& [k, v] : server_.headers) req.set(k, v);
  req.prepare_payload();
  c->lowest().expires_after(limit);
  error_code ec = co_await do_write(*c, req);
  Parser p;
  if (!ec) ec = co_await do_read_header(*c, p);
  if (!ec) spdlog::debug("[{}] DELETE of the session: HTTP {}", server_.name, p.get().result_int());
  c->close();
}

void Remote::close() {
  closed_ = true;
  queue_.clear();
  for (auto& w : live_) {
    if (auto c = w.lock()) c->close();
  }
  live_.clear();
  idle_.clear();
  slot_free_.cancel();
  endpoint_known_.cancel();
}

void Remote::fail(const std::string& reason) {
  if (closed_ || failed_) return;
  failed_ = true;
  auto on_failure = handlers_.on_failure;
  close();
  if (on_failure) on_failure(reason);
}

void Remote::deliver(std::string_view message) {
  if (closed_ || message.empty()) return;
  if (message.size() > server_.max_line_bytes) {
    fail(fmt::format("it sent a message longer than max_line_bytes ({})", server_.max_line_bytes));
    return;
  }
  if (handlers_.on_message) handlers_.on_message(message);
}

void Remote::answer_error(const Outgoing& m, const std::string& message) {
  if (m.id.empty()) {
    spdlog::warn("[{}] {}", server_.name, message);
    return;
  }
  deliver(json::make_error(m.id, json::kUpstreamFailed, message));
}

asio::awaitable<void> Remote::send_loop() {
  auto self = shared_from_this();
  Running running(*this);
  while (!queue_.empty() && !closed_) {
    if (mode_ == Mode::kLegacy && legacy_post_.target.empty()) {
      // The stream has not named its endpoint yet; close() or the endpoint wakes us.
      error_code ec;
      endpoint_known_.expires_at(asio::steady_timer::time_point::max());
      co_await endpoint_known_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    Outgoing m = std::move(queue_.front());
    queue_.pop_front();
    std::string error;
    bool reused = false;
    std::shared_ptr<Conn> c = co_await acquire(error, reused);
    if (!c) {
      if (!closed_) fail(error);
      break;
    }
    const bool legacy = mode_ == Mode::kLegacy;
    const Target& to = legacy ? legacy_post_ : base_;
    http::request<http::string_body> req{http::verb::post, to.target, 11};
    req.set(http::field::host, host_header(to.host, to.port, tls_));
    req.set(http::field::user_agent, "toolbridge");
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "application/json, text/event-stream");
    if (!legacy && !session_id_.empty()) req.set("Mcp-Session-Id", session_id_);
    if (!legacy && !protocol_version_.empty()) req.set("MCP-Protocol-Version", protocol_version_);
    for (const auto& [k, v] : server_.headers) req.set(k, v);
    req.keep_alive(true);
    req.body() = m.body;
    req.prepare_payload();
    const error_code ec = co_await do_write(*c, req);
    if (closed_) break;
    if (ec) {
      release(c, false);
      if (reused && !m.retried) {
        // The server closed an idle keep-alive connection: the request never left; resend.
        m.retried = true;
        queue_.push_front(std::move(m));
        continue;
      }
      fail("cannot send to " + where() + ": " + ec.message());
      break;
    }
    if (m.call_id && handlers_.on_sent) handlers_.on_sent(m.call_id);
    m.reused = reused;
    asio::co_spawn(
        io_,
        [self, c, m = std::move(m), reused]() mutable {
          return self->read_response(std::move(c), std::move(m));
        },
        asio::detached);
  }
  sending_ = false;
}

asio::awaitable<std::shared_ptr<Remote::Conn>> Remote::acquire(std::string& error, bool& reused) {
  while (!idle_.empty()) {
    auto c = std::move(idle_.back());
    idle_.pop_back();
    if (c->is_open() && !c->closed_by_peer()) {
      ++active_;
      reused = true;
      co_return c;
    }
    c->close();
  }
  while (active_ >= server_.max_connections && !closed_) {
    // Every connection is busy (answers streaming): wait for one to be released.
    error_code ec;
    slot_free_.expires_at(asio::steady_timer::time_point::max());
    co_await slot_free_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      if (c->is_open() && !c->closed_by_peer()) {
        ++active_;
        reused = true;
        co_return c;
      }
      c->close();
    }
  }
  if (closed_) co_return nullptr;
  ++active_;
  auto c = co_await connect(error);
  if (!c) --active_;
  co_return c;
}

asio::awaitable<std::shared_ptr<Remote::Conn>> Remote::connect(std::string& error) {
  auto self = shared_from_this();
  error_code ec;
  tcp::resolver resolver(io_);
  auto results = co_await resolver.async_resolve(base_.host, base_.port,
                                                 asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    error = fmt::format("cannot resolve {}: {}", base_.host, ec.message());
    co_return nullptr;
  }
  auto c = std::make_shared<Conn>();
  if (tls_) {
    c->tls.emplace(io_, *ssl_);
  } else {
    c->plain.emplace(io_);
  }
  live_.push_back(c);
  std::erase_if(live_, [](const std::weak_ptr<Conn>& w) { return w.expired(); });
  beast::tcp_stream& s = c->lowest();
  s.expires_after(server_.connect_timeout);
  co_await s.async_connect(results, asio::redirect_error(asio::use_awaitable, ec));
  if (closed_) co_return nullptr;
  if (ec) {
    error = fmt::format(
        "cannot connect to {} ({}:{}): {}", where(), base_.host, base_.port,
        ec == beast::error::timeout ? "no answer within connect_timeout" : ec.message());
    co_return nullptr;
  }
  s.socket().set_option(tcp::no_delay(true), ec);
  if (tls_) {
    // SNI, and the certificate must name the host we asked for.
    SSL_set_tlsext_host_name(c->tls->native_handle(), base_.host.c_str());
    if (server_.tls_verify) c->tls->set_verify_callback(ssl::host_name_verification(base_.host));
    co_await c->tls->async_handshake(ssl::stream_base::client,
                                     asio::redirect_error(asio::use_awaitable, ec));
    if (closed_) co_return nullptr;
    if (ec) {
      error =
          fmt::format("TLS handshake with {} failed: {}{}", where(), ec.message(),
                      server_.tls_verify ? " (tls_verify is on; ca_file names a private CA)" : "");
      co_return nullptr;
    }
  }
  s.expires_never();
  co_return c;
}

void Remote::release(const std::shared_ptr<Conn>& c, bool reusable) {
  if (active_ > 0) --active_;
  if (reusable && !closed_ && c->is_open()) {
    idle_.push_back(c);
  } else {
    c->close();
  }
  slot_free_.cancel();
}

asio::awaitable<void> Remote::read_response(std::shared_ptr<Conn> c, Outgoing m) {
  auto self = shared_from_this();
  Running running(*this);
  Parser p;
  p.body_limit((std::numeric_limits<std::uint64_t>::max)());
  error_code ec = co_await do_read_header(*c, p);
  if (closed_) co_return;
  if (ec) {
    release(c, false);
    if (m.reused && !m.retried && ec == http::error::end_of_stream) {
      // Closed by the server as it went idle, before it read our request: send it again.
      m.retried = true;
      queue_.push_front(std::move(m));
      if (!sending_) {
        sending_ = true;
        asio::co_spawn(
            io_, [self]() { return self->send_loop(); }, asio::detached);
      }
      co_return;
    }
    fail("the connection to " + where() + " broke before it answered (" + ec.message() + ")");
    co_return;
  }
  const int status = p.get().result_int();
  if (m.initialize && mode_ != Mode::kLegacy) {
    if (auto it = p.get().find("Mcp-Session-Id"); it != p.get().end()) {
      session_id_ = std::string(it->value());
    }
  }
  const std::string content_type(p.get()[http::field::content_type]);
  const bool sse = content_type.starts_with("text/event-stream");
  const bool json_body = content_type.starts_with("application/json");

  // Reads the body in pieces; `on_bytes` gets each piece. Returns the read error, if any.
  char chunk[16 * 1024];
  transport::SseReader events;
  std::string body;
  bool answered = false;
  bool too_long = false;
  const bool keep_body = !sse && (json_body || status >= 400);
  while (!p.is_done()) {
    p.get().body().data = chunk;
    p.get().body().size = sizeof chunk;
    ec = co_await do_read_some(*c, p);
    if (closed_) co_return;
    if (ec == http::error::need_buffer) ec = {};
    if (ec) break;
    const std::string_view bytes(chunk, sizeof chunk - p.get().body().size);
    if (sse) {
      events.feed_events(bytes, [&](std::string_view type, std::string data) {
        if (type != "" && type != "message") return;
        if (!answered && !m.id.empty()) {
          const json::Envelope env = json::parse_envelope(data);
          answered = env.kind == json::Kind::kResponse && env.id.in(data) == m.id;
        }
        deliver(data);
      });
      if (events.buffered() > server_.max_line_bytes) too_long = true;
    } else if (keep_body) {
      body.append(bytes);
      if (body.size() > server_.max_line_bytes) too_long = true;
    }
    if (too_long) break;
  }
  if (failed_ || closed_) co_return;
  if (too_long) {
    release(c, false);
    fail(fmt::format("it sent a message longer than max_line_bytes ({})", server_.max_line_bytes));
    co_return;
  }
  release(c, !ec && p.is_done() && p.keep_alive());

  if (status == 404 && !session_id_.empty() && mode_ != Mode::kLegacy) {
    // The server forgot our session (restart, expiry): a new instance initializes a new one.
    fail("it no longer knows the MCP session (HTTP 404); starting a new session");
    co_return;
  }
  if (m.initialize && mode_ == Mode::kProbing &&
      (status == 400 || status == 404 || status == 405)) {
    // Not Streamable HTTP: try the legacy HTTP+SSE transport on the same URL.
    spdlog::info("[{}] {} answered HTTP {} to initialize; trying the legacy HTTP+SSE transport",
                 server_.name, where(), status);
    mode_ = Mode::kLegacy;
    queue_.push_front(std::move(m));
    asio::co_spawn(
        io_, [self]() { return self->legacy_stream(); }, asio::detached);
    if (!sending_) {
      sending_ = true;
      asio::co_spawn(
          io_, [self]() { return self->send_loop(); }, asio::detached);
    }
    co_return;
  }
  if (m.initialize && mode_ == Mode::kProbing && status >= 200 && status < 300) {
    mode_ = Mode::kStreamable;
  }
  if (status >= 400 || status < 200) {
    std::string text = body.substr(0, kErrorBodyBytes);
    std::replace(text.begin(), text.end(), '\n', ' ');
    answer_error(m, fmt::format("{} answered HTTP {} {}{}{}", where(), status,
                                std::string(p.get().reason()), text.empty() ? "" : ": ", text));
    co_return;
  }
  if (ec && !sse) {
    fail("the connection to " + where() + " broke during its answer (" + ec.message() + ")");
    co_return;
  }
  if (json_body && !body.empty()) {
    if (body.front() == '[') {
      // A batch: each element is one message.
      error_code jec;
      boost::json::value v = boost::json::parse(body, jec);
      if (!jec && v.is_array()) {
        for (const auto& item : v.as_array()) deliver(boost::json::serialize(item));
      }
    } else {
      deliver(body);
    }
    co_return;
  }
  if (sse && !answered && !m.id.empty()) {
    if (!events.last_id().empty()) {
      // The server closed the stream early but gave an event id: resume it (SEP-1699).
      const long retry = events.retry_ms() >= 0 ? events.retry_ms() : kDefaultRetryMs;
      asio::co_spawn(
          io_,
          [self, id = events.last_id(), retry, awaiting = m.id]() {
            return self->get_stream(id, retry, awaiting);
          },
          asio::detached);
    } else {
      answer_error(m, where() + " closed the response stream before answering" +
                          (ec ? " (" + ec.message() + ")" : std::string()));
    }
  }
}

asio::awaitable<void> Remote::get_stream(std::string last_event_id, long retry_ms,
                                         std::string awaiting) {
  auto self = shared_from_this();
  Running running(*this);
  const bool resuming = !awaiting.empty();
  // A resumption waits `retry` first; the standalone stream reconnects after it ends.
  for (int attempt = 0; !closed_; ++attempt) {
    if (resuming || attempt > 0) {
      if (resuming && attempt >= kMaxResumes) {
        Outgoing m;
        m.id = awaiting;
        answer_error(m, fmt::format("{} did not deliver the answer after {} reconnections", where(),
                                    kMaxResumes));
        co_return;
      }
      asio::steady_timer wait(io_, std::chrono::milliseconds(retry_ms));
      error_code wec;
      co_await wait.async_wait(asio::redirect_error(asio::use_awaitable, wec));
      if (closed_) co_return;
    }
    std::string error;
    auto c = co_await connect(error);
    if (closed_) co_return;
    if (!c) {
      fail(error);
      co_return;
    }
    http::request<http::string_body> req{http::verb::get, base_.target, 11};
    req.set(http::field::host, host_header(base_.host, base_.port, tls_));
    req.set(http::field::user_agent, "toolbridge");
    req.set(http::field::accept, "text/event-stream");
    if (!session_id_.empty()) req.set("Mcp-Session-Id", session_id_);
    if (!protocol_version_.empty()) req.set("MCP-Protocol-Version", protocol_version_);
    if (!last_event_id.empty()) req.set("Last-Event-ID", last_event_id);
    for (const auto& [k, v] : server_.headers) req.set(k, v);
    req.prepare_payload();
    error_code ec = co_await do_write(*c, req);
    Parser p;
    p.body_limit((std::numeric_limits<std::uint64_t>::max)());
    if (!ec) ec = co_await do_read_header(*c, p);
    if (closed_) co_return;
    if (ec) {
      c->close();
      fail("the event stream from " + where() + " broke (" + ec.message() + ")");
      co_return;
    }
    const int status = p.get().result_int();
    const std::string content_type(p.get()[http::field::content_type]);
    if (status == 404 && !session_id_.empty()) {
      c->close();
      fail("it no longer knows the MCP session (HTTP 404); starting a new session");
      co_return;
    }
    if (status != 200 || !content_type.starts_with("text/event-stream")) {
      c->close();
      if (resuming) {
        Outgoing m;
        m.id = awaiting;
        answer_error(
            m, fmt::format("{} refused to resume the response stream (HTTP {})", where(), status));
      }
      // No standalone stream (405 is the usual answer): the server only answers POSTs.
      co_return;
    }
    transport::SseReader events;
    bool answered = false;
    char chunk[16 * 1024];
    while (!p.is_done() && !closed_) {
      p.get().body().data = chunk;
      p.get().body().size = sizeof chunk;
      ec = co_await do_read_some(*c, p);
      if (closed_) co_return;
      if (ec == http::error::need_buffer) ec = {};
      if (ec) break;
      events.feed_events(std::string_view(chunk, sizeof chunk - p.get().body().size),
                         [&](std::string_view type, std::string data) {
                           if (type != "" && type != "message") return;
                           if (resuming && !answered) {
                             const json::Envelope env = json::parse_envelope(data);
                             answered =
                                 env.kind == json::Kind::kResponse && env.id.in(data) == awaiting;
                           }
                           deliver(data);
                         });
      if (events.buffered() > server_.max_line_bytes) {
        fail(fmt::format("it sent a message longer than max_line_bytes ({})",
                         server_.max_line_bytes));
        co_return;
      }
      if (answered) break;
    }
    c->close();
    if (closed_ || failed_ || answered) co_return;
    if (!events.last_id().empty()) last_event_id = events.last_id();
    if (events.retry_ms() >= 0) retry_ms = events.retry_ms();
  }
}

asio::awaitable<void> Remote::legacy_stream() {
  auto self = shared_from_this();
  Running running(*this);
  std::string error;
  auto c = co_await connect(error);
  if (closed_) co_return;
  if (!c) {
    fail(error);
    co_return;
  }
  http::request<http::string_body> req{http::verb::get, base_.target, 11};
  req.set(http::field::host, host_header(base_.host, base_.port, tls_));
  req.set(http::field::user_agent, "toolbridge");
  req.set(http::field::accept, "text/event-stream");
  for (const auto& [k, v] : server_.headers) req.set(k, v);
  req.prepare_payload();
  error_code ec = co_await do_write(*c, req);
  Parser p;
  p.body_limit((std::numeric_limits<std::uint64_t>::max)());
  if (!ec) ec = co_await do_read_header(*c, p);
  if (closed_) co_return;
  if (ec) {
    c->close();
    fail("the legacy SSE stream from " + where() + " broke (" + ec.message() + ")");
    co_return;
  }
  const int status = p.get().result_int();
  const std::string content_type(p.get()[http::field::content_type]);
  if (status != 200 || !content_type.starts_with("text/event-stream")) {
    c->close();
    fail(
        fmt::format("{} is neither a Streamable HTTP nor a legacy SSE endpoint (GET answered "
                    "HTTP {}{})",
                    where(), status, content_type.empty() ? "" : ", " + content_type));
    co_return;
  }
  transport::SseReader events;
  char chunk[16 * 1024];
  std::string bad_endpoint;
  while (!p.is_done() && !closed_) {
    p.get().body().data = chunk;
    p.get().body().size = sizeof chunk;
    ec = co_await do_read_some(*c, p);
    if (closed_) co_return;
    if (ec == http::error::need_buffer) ec = {};
    if (ec) break;
    events.feed_events(std::string_view(chunk, sizeof chunk - p.get().body().size),
                       [&](std::string_view type, std::string data) {
                         if (type == "endpoint") {
                           // Relative to the stream's URL; it must stay on the same origin.
                           boost::urls::url_view base(server_.url);
                           auto ref = boost::urls::parse_uri_reference(data);
                           boost::urls::url out;
                           if (!ref.has_value() ||
                               !boost::urls::resolve(base, *ref, out).has_value() ||
                               out.host_address() != base.host_address() ||
                               out.port() != base.port() || out.scheme() != base.scheme()) {
                             bad_endpoint = data;
                             return;
                           }
                           legacy_post_ = base_;
                           legacy_post_.target = std::string(out.encoded_target());
                           endpoint_known_.cancel();
                         } else if (type.empty() || type == "message") {
                           deliver(data);
                         }
                       });
    if (!bad_endpoint.empty()) {
      c->close();
      fail("the legacy SSE stream named an endpoint on another origin or not a URL: '" +
           bad_endpoint.substr(0, 200) + "'");
      co_return;
    }
    if (events.buffered() > server_.max_line_bytes) {
      c->close();
      fail(
          fmt::format("it sent a message longer than max_line_bytes ({})", server_.max_line_bytes));
      co_return;
    }
  }
  c->close();
  if (!closed_) {
    fail("the legacy SSE stream from " + where() + " ended" +
         (ec ? " (" + ec.message() + ")" : std::string()));
  }
}

static asio::awaitable<error_code> do_write(Remote::Conn& c,
                                            http::request<http::string_body>& req) {
  error_code ec;
  if (c.tls) {
    co_await http::async_write(*c.tls, req, asio::redirect_error(asio::use_awaitable, ec));
  } else {
    co_await http::async_write(*c.plain, req, asio::redirect_error(asio::use_awaitable, ec));
  }
  co_return ec;
}

static asio::awaitable<error_code> do_read_header(Remote::Conn& c, Parser& p) {
  error_code ec;
  if (c.tls) {
    co_await http::async_read_header(*c.tls, c.buffer, p,
                                     asio::redirect_error(asio::use_awaitable, ec));
  } else {
    co_await http::async_read_header(*c.plain, c.buffer, p,
                                     asio::redirect_error(asio::use_awaitable, ec));
  }
  co_return ec;
}

static asio::awaitable<error_code> do_read_some(Remote::Conn& c, Parser& p) {
  error_code ec;
  if (c.tls) {
    co_await http::async_read_some(*c.tls, c.buffer, p,
                                   asio::redirect_error(asio::use_awaitable, ec));
  } else {
    co_await http::async_read_some(*c.plain, c.buffer, p,
                                   asio::redirect_error(asio::use_awaitable, ec));
  }
  co_return ec;
}

}  // namespace toolbridge::upstream
