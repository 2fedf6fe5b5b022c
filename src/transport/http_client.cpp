#include "transport/http_client.h"

#include <fmt/format.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/string.hpp>
#include <limits>
#include <map>

#include "base/clock.h"
#include "base/event.h"

namespace toolbridge::transport {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using error_code = boost::system::error_code;

namespace {
constexpr std::size_t kChunkBytes = 16 * 1024;

HttpError closed_error() {
  return {HttpStep::kClosed, asio::error::operation_aborted, "the HTTP client was closed"};
}
}  // namespace

// The connections of one client: per origin, idle keep-alive ones and a count of busy ones.
class HttpClientPool {
 public:
  HttpClientPool(asio::any_io_executor ex, HttpClientOptions options)
      : ex_(std::move(ex)), options_(std::move(options)) {}

  asio::any_io_executor executor() const { return ex_; }
  const HttpClientOptions& options() const { return options_; }
  bool closed() const { return closed_; }
  std::size_t opened() const { return opened_; }
  std::size_t idle() const {
    std::size_t n = 0;
    for (const auto& [key, o] : origins_) n += o.idle.size();
    return n;
  }

  base::Status prepare_tls();
  // Gives `st` a connection as its lease says; `fresh` skips idle ones and keeps a slot it
  // already holds (the resend after a stale keep-alive connection).
  asio::awaitable<void> acquire(HttpExchange::State& st, bool fresh);
  // Takes back the connection of `st` (kept idle when `reusable`) and frees its slot.
  void release(HttpExchange::State& st, bool reusable);
  void close();

 private:
  struct Origin {
    std::vector<std::shared_ptr<HttpConnection>> idle;
    std::size_t busy = 0;
    base::Event slot_free;  // notified when a connection is released
  };
  Origin& origin(const Url& url) { return origins_.try_emplace(url.origin()).first->second; }
  std::shared_ptr<HttpConnection> take_idle(Origin& o);
  asio::awaitable<std::shared_ptr<HttpConnection>> connect(const Url& url, HttpError& error);

  asio::any_io_executor ex_;
  HttpClientOptions options_;
  std::unique_ptr<ssl::context> ssl_;
  std::string ssl_error_;
  std::map<std::string, Origin> origins_;
  std::vector<std::weak_ptr<HttpConnection>> live_;
  std::size_t opened_ = 0;
  bool closed_ = false;
};

struct HttpExchange::State {
  std::shared_ptr<HttpClientPool> pool;
  HttpRequest request;
  OutgoingRequest message;
  std::shared_ptr<HttpConnection> conn;
  std::unique_ptr<ResponseParser> parser;
  std::vector<char> chunk;
  HttpError error;
  bool counted = false;  // holds one of the origin's max_connections slots
  bool reused = false;
  bool retried = false;  // already resent once after a stale keep-alive connection
  bool body_done = false;

  ~State() {
    if (conn) pool->release(*this, false);
  }
  void fail(HttpError e) {
    error = pool->closed() ? closed_error() : std::move(e);
    if (conn) pool->release(*this, false);
  }
  // Acquires a connection and writes the request, once more on a new connection when a reused
  // one turns out to be dead.
  asio::awaitable<void> write(bool fresh);
};

// ---- pool ------------------------------------------------------------------------------------

base::Status HttpClientPool::prepare_tls() {
  if (ssl_) return {};
  if (!ssl_error_.empty()) return base::fail(ssl_error_);
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  const TlsTrust& trust = options_.tls;
  if (trust.verify) {
    error_code ec;
    if (trust.ca_file.empty()) {
      ctx->set_default_verify_paths(ec);
    } else {
      ctx->load_verify_file(trust.ca_file, ec);
    }
    if (ec) {
      const std::string from = trust.ca_file.empty() ? "" : " from '" + trust.ca_file + "'";
      ssl_error_ = "cannot load trusted certificates" + from + ": " + ec.message();
      return base::fail(ssl_error_);
    }
    ctx->set_verify_mode(ssl::verify_peer);
  } else {
    ctx->set_verify_mode(ssl::verify_none);
  }
  ssl_ = std::move(ctx);
  return {};
}

std::shared_ptr<HttpConnection> HttpClientPool::take_idle(Origin& o) {
  while (!o.idle.empty()) {
    auto c = std::move(o.idle.back());
    o.idle.pop_back();
    if (c->reusable_when_idle()) return c;
    c->close();
  }
  return nullptr;
}

asio::awaitable<void> HttpClientPool::acquire(HttpExchange::State& st, bool fresh) {
  const Url& url = st.request.url;
  const Lease lease = st.request.lease;
  Origin& o = origin(url);
  st.reused = false;
  if (closed_) {
    st.error = closed_error();
    co_return;
  }
  while (lease != Lease::kOwn && !st.counted) {
    if (closed_) {
      st.error = closed_error();
      co_return;
    }
    if (!fresh) {
      if (auto c = take_idle(o)) {
        st.conn = std::move(c);
        st.counted = true;
        st.reused = true;
        ++o.busy;
        co_return;
      }
    }
    if (o.busy < options_.max_connections || lease == Lease::kUnbounded) {
      st.counted = true;
      ++o.busy;
      break;
    }
    // Every connection is busy (answers streaming): wait for one to be released.
    co_await o.slot_free.wait();
  }
  HttpError error;
  auto c = co_await connect(url, error);
  if (!c) {
    st.fail(std::move(error));
    if (st.counted) {
      st.counted = false;
      --o.busy;
      o.slot_free.notify_all();
    }
    co_return;
  }
  st.conn = std::move(c);
}

asio::awaitable<std::shared_ptr<HttpConnection>> HttpClientPool::connect(const Url& url,
                                                                         HttpError& error) {
  ssl::context* tls = nullptr;
  if (url.tls) {
    const base::Status prepared = prepare_tls();
    if (!prepared) {
      error = {HttpStep::kTls, {}, prepared.error()};
      co_return nullptr;
    }
    tls = ssl_.get();
  }
  ++opened_;
  auto c = std::make_shared<HttpConnection>(ex_, tls, url);
  // Registered before connecting, so that close() also ends connections still being made.
  std::erase_if(live_, [](const std::weak_ptr<HttpConnection>& w) { return w.expired(); });
  live_.push_back(c);
  error = co_await c->connect(url, options_.tls.verify, options_.connect_timeout,
                              options_.handshake_timeout);
  if (closed_) error = closed_error();
  if (error) {
    c->close();
    c.reset();
  }
  co_return c;
}

void HttpClientPool::release(HttpExchange::State& st, bool reusable) {
  auto c = std::move(st.conn);
  Origin& o = origin(st.request.url);
  if (st.counted) {
    st.counted = false;
    if (o.busy > 0) --o.busy;
    o.slot_free.notify_all();
  }
  if (!c) return;
  if (reusable && !closed_ && st.request.lease != Lease::kOwn && c->is_open() &&
      o.idle.size() < options_.max_idle) {
    o.idle.push_back(std::move(c));
  } else {
    c->close();
  }
}

void HttpClientPool::close() {
  closed_ = true;
  for (auto& w : live_) {
    if (auto c = w.lock()) c->close();
  }
  live_.clear();
  for (auto& [key, o] : origins_) {
    o.idle.clear();
    o.slot_free.notify_all();
  }
}

// ---- exchange --------------------------------------------------------------------------------

asio::awaitable<void> HttpExchange::State::write(bool fresh) {
  for (;;) {
    co_await pool->acquire(*this, fresh);
    if (!conn) co_return;
    HttpError e = co_await conn->write(message, request.write_timeout);
    if (!e) co_return;
    if (!reused || retried || pool->closed()) {
      fail(std::move(e));
      co_return;
    }
    // The server closed an idle keep-alive connection: the request never left; resend it.
    retried = true;
    conn->close();
    conn.reset();
    fresh = true;
  }
}

HttpExchange::HttpExchange() = default;
HttpExchange::HttpExchange(std::unique_ptr<State> state) : state_(std::move(state)) {}
HttpExchange::HttpExchange(HttpExchange&&) noexcept = default;
HttpExchange& HttpExchange::operator=(HttpExchange&&) noexcept = default;
HttpExchange::~HttpExchange() = default;

const HttpError& HttpExchange::error() const {
  static const HttpError kNoExchange{HttpStep::kClosed, {}, "no HTTP request was sent"};
  return state_ ? state_->error : kNoExchange;
}

bool HttpExchange::reused() const {
  return state_ && state_->reused;
}

asio::awaitable<bool> HttpExchange::read_header() {
  if (!state_ || state_->error) co_return false;
  State& st = *state_;
  for (;;) {
    st.parser = std::make_unique<ResponseParser>();
    st.parser->body_limit((std::numeric_limits<std::uint64_t>::max)());
    if (st.request.verb == http::verb::head) st.parser->skip(true);
    HttpError e = co_await st.conn->read_header(*st.parser, st.request.header_timeout);
    if (!e) break;
    if (st.reused && !st.retried && !st.pool->closed() && e.code == http::error::end_of_stream) {
      // Closed by the server as it went idle, before it read the request: send it again.
      st.retried = true;
      st.conn->close();
      st.conn.reset();
      co_await st.write(true);
      if (st.error) co_return false;
      continue;
    }
    st.fail(std::move(e));
    co_return false;
  }
  if (st.parser->is_done()) {
    st.body_done = true;
    st.pool->release(st, st.parser->keep_alive());
  }
  co_return true;
}

int HttpExchange::status() const {
  return state_ && state_->parser ? static_cast<int>(state_->parser->get().result_int()) : 0;
}

std::string HttpExchange::reason() const {
  return state_ && state_->parser ? std::string(state_->parser->get().reason()) : std::string();
}

std::string HttpExchange::header(std::string_view name) const {
  if (!state_ || !state_->parser) return {};
  const auto& fields = state_->parser->get();
  auto it = fields.find(boost::beast::string_view(name.data(), name.size()));
  return it == fields.end() ? std::string() : std::string(it->value());
}

HeaderList HttpExchange::headers() const {
  HeaderList out;
  if (!state_ || !state_->parser) return out;
  for (const auto& f : state_->parser->get()) {
    out.emplace_back(std::string(f.name_string()), std::string(f.value()));
  }
  return out;
}

bool HttpExchange::keep_alive() const {
  return state_ && state_->parser && state_->parser->keep_alive();
}

bool HttpExchange::done() const {
  return state_ && state_->body_done;
}

asio::awaitable<std::string_view> HttpExchange::read_some() {
  if (!state_ || state_->error || state_->body_done || !state_->parser)
    co_return std::string_view();
  State& st = *state_;
  if (st.chunk.empty()) st.chunk.resize(kChunkBytes);
  for (;;) {
    auto& body = st.parser->get().body();
    body.data = st.chunk.data();
    body.size = st.chunk.size();
    HttpError e = co_await st.conn->read_some(*st.parser, st.request.body_timeout);
    if (e) {
      st.fail(std::move(e));
      co_return std::string_view();
    }
    const std::size_t n = st.chunk.size() - st.parser->get().body().size;
    if (st.parser->is_done()) {
      st.body_done = true;
      st.pool->release(st, st.parser->keep_alive());
    }
    if (n > 0 || st.body_done) co_return std::string_view(st.chunk.data(), n);
  }
}

asio::awaitable<bool> HttpExchange::read_body(std::string& out, std::size_t limit) {
  std::size_t got = 0;
  while (!done()) {
    const std::string_view piece = co_await read_some();
    if (failed()) co_return false;
    got += piece.size();
    if (got > limit) {
      const std::string from = state_->request.url.origin();
      state_->fail({HttpStep::kTooLong,
                    {},
                    fmt::format("the answer from {} is longer than {} bytes", from, limit)});
      co_return false;
    }
    out.append(piece);
  }
  co_return !failed();
}

void HttpExchange::close() {
  if (!state_) return;
  if (!state_->error && !state_->body_done) {
    state_->error = {HttpStep::kClosed, asio::error::operation_aborted,
                     "the request was abandoned"};
  }
  if (state_->conn) state_->pool->release(*state_, false);
}

// ---- client ----------------------------------------------------------------------------------

std::string HttpResponse::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (boost::beast::iequals(k, name)) return v;
  }
  return {};
}

HttpClient::HttpClient(asio::any_io_executor ex, HttpClientOptions options)
    : pool_(std::make_shared<HttpClientPool>(std::move(ex), std::move(options))) {}

HttpClient::~HttpClient() {
  pool_->close();
}

base::Status HttpClient::prepare_tls() {
  return pool_->prepare_tls();
}

asio::awaitable<HttpExchange> HttpClient::send(HttpRequest request) {
  auto st = std::make_unique<HttpExchange::State>();
  st->pool = pool_;
  st->request = std::move(request);
  const HttpRequest& r = st->request;
  OutgoingRequest& m = st->message;
  m.method(r.verb);
  m.target(r.url.target);
  m.version(11);
  m.set(http::field::host, host_header(r.url));
  m.set(http::field::user_agent, pool_->options().user_agent);
  for (const auto& [k, v] : r.headers) m.set(k, v);
  m.body() = std::move(st->request.body);  // the message holds the body (a resend writes it)
  m.prepare_payload();
  co_await st->write(false);
  co_return HttpExchange(std::move(st));
}

asio::awaitable<HttpResponse> HttpClient::fetch(HttpRequest request, std::size_t body_limit) {
  HttpResponse out;
  HttpExchange ex = co_await send(std::move(request));
  if (co_await ex.read_header()) {
    out.status = ex.status();
    out.reason = ex.reason();
    out.headers = ex.headers();
    co_await ex.read_body(out.body, body_limit);
  }
  out.error = ex.error();
  co_return out;
}

void HttpClient::close() {
  pool_->close();
}

std::size_t HttpClient::connections_opened() const {
  return pool_->opened();
}
std::size_t HttpClient::idle_connections() const {
  return pool_->idle();
}

}  // namespace toolbridge::transport
