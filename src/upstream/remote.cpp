#include "upstream/remote.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <boost/url.hpp>

#include "base/held_bytes.h"
#include "base/spawn.h"
#include "json/envelope.h"
#include "json/parse.h"
#include "upstream/stateless.h"

namespace toolbridge::upstream {

namespace asio = boost::asio;
using namespace std::chrono_literals;
namespace http = transport::http;
using error_code = boost::system::error_code;
using transport::HttpExchange;
using transport::HttpStep;

namespace {
constexpr long kDefaultRetryMs = 1'000;  // SSE reconnection delay when the server names none
constexpr int kMaxResumes = 5;           // Last-Event-ID reconnections for one request
constexpr std::size_t kErrorBodyBytes = 300;

transport::HttpClientOptions client_options(const config::Server& server) {
  transport::HttpClientOptions o;
  o.tls = {server.tls_verify, server.ca_file};
  o.connect_timeout = server.connect_timeout;
  o.handshake_timeout = server.connect_timeout;
  o.max_connections = server.max_connections;
  o.max_idle = server.max_connections;
  return o;
}

// Why a step failed, without the sentence around it.
std::string reason_of(const transport::HttpError& e) {
  return e.code && !e.timed_out() ? e.code.message() : e.message;
}

// A JSON-RPC error answering the request `id` (raw JSON), as a stateless server's 4xx body is.
bool is_error_answer(std::string_view id, std::string_view body) {
  const json::Envelope env = json::parse_envelope(body);
  return !id.empty() && env.kind == json::Kind::kResponse && !env.error.empty() &&
         env.id.in(body) == id;
}

bool before_sending(const transport::HttpError& e) {
  return e.step == HttpStep::kTls || e.step == HttpStep::kResolve || e.step == HttpStep::kConnect ||
         e.step == HttpStep::kHandshake;
}
}  // namespace

Remote::Remote(asio::io_context& io, const base::Clock& clock, const config::Server& server,
               Handlers handlers)
    : io_(io),
      clock_(clock),
      server_(server),
      handlers_(std::move(handlers)),
      client_(io.get_executor(), client_options(server_)),
      endpoint_known_(io, clock) {}

Remote::~Remote() = default;

base::Status Remote::open() {
  auto parsed = transport::parse_url(server_.url);
  if (!parsed) return base::Unexpected{parsed.error()};
  base_ = *parsed;
  if (server_.transport == config::RemoteTransport::kStreamableHttp) mode_ = Mode::kStreamable;
  if (server_.transport == config::RemoteTransport::kSse) mode_ = Mode::kLegacy;
  if (base_.tls) {
    if (base::Status prepared = client_.prepare_tls(); !prepared) return prepared;
  }
  if (mode_ == Mode::kLegacy) {
    asio::co_spawn(
        io_, [self = shared_from_this()]() { return self->legacy_stream(); }, base::log_failure("remote legacy SSE stream"));
  }
  return {};
}

std::string Remote::transport_name() const {
  return mode_ == Mode::kLegacy ? "sse" : "streamable_http";
}

std::string Remote::where() const {
  return server_.url;
}

std::string Remote::describe(const transport::HttpError& e) const {
  const std::string reason = reason_of(e);
  switch (e.step) {
    case HttpStep::kConnect:
      return fmt::format("cannot connect to {} ({}:{}): {}", where(), base_.host, base_.port,
                         e.timed_out() ? "no answer within connect_timeout" : reason);
    case HttpStep::kHandshake:
      return fmt::format(
          "TLS handshake with {} failed: {}{}", where(),
          e.timed_out() ? "no answer within connect_timeout" : reason,
          server_.tls_verify ? " (tls_verify is on; ca_file names a private CA)" : "");
    case HttpStep::kWrite:
      return "cannot send to " + where() + ": " + reason;
    case HttpStep::kReadHeader:
      return "the connection to " + where() + " broke before it answered (" + reason + ")";
    case HttpStep::kReadBody:
      return "the connection to " + where() + " broke during its answer (" + reason + ")";
    default:
      return e.message;  // resolving, certificates, a closed client: already complete
  }
}

transport::HttpRequest Remote::request(http::verb verb, const transport::Url& to) const {
  transport::HttpRequest r;
  r.verb = verb;
  r.url = to;
  const bool legacy = mode_ == Mode::kLegacy;
  if (verb == http::verb::post) {
    r.headers.emplace_back("Content-Type", "application/json");
    r.headers.emplace_back("Accept", "application/json, text/event-stream");
  } else if (verb == http::verb::get) {
    r.headers.emplace_back("Accept", "text/event-stream");
  }
  if (!legacy && !session_id_.empty()) r.headers.emplace_back("Mcp-Session-Id", session_id_);
  if (!legacy && !protocol_version_.empty()) {
    r.headers.emplace_back("MCP-Protocol-Version", protocol_version_);
  }
  for (const auto& [k, v] : server_.headers) r.headers.emplace_back(k, v);
  // A call is bounded by the Instance's deadline, and an event stream may be quiet for long:
  // only writing a message has a limit of its own here.
  r.write_timeout = server_.call_timeout;
  r.header_timeout = transport::kNoTimeout;
  r.body_timeout = transport::kNoTimeout;
  return r;
}

void Remote::send(std::string message, std::uint64_t call_id) {
  if (closed_ || failed_) return;
  Outgoing m;
  const json::Envelope env = json::parse_envelope(message);
  if (env.kind == json::Kind::kRequest) {
    m.id = std::string(env.id.in(message));
    m.initialize = env.method == "initialize";
  }
  if (stateless_ || (env.kind == json::Kind::kRequest && env.method == "server/discover")) {
    StatelessMessage sm = to_stateless(message);
    message = std::move(sm.body);
    m.stateless = true;
    m.method = std::move(sm.method);
    m.name = std::move(sm.name);
  }
  m.body = std::move(message);
  m.call_id = call_id;
  queue_.push_back(std::move(m));
  spawn_send_loop();
}

void Remote::spawn_send_loop() {
  if (sending_) return;
  sending_ = true;
  asio::co_spawn(
      io_, [self = shared_from_this()]() { return self->send_loop(); }, base::log_failure("remote send loop"));
}

void Remote::set_stateless(std::string version) {
  stateless_ = true;
  protocol_version_ = std::move(version);
  mode_ = Mode::kStreamable;
}

void Remote::set_protocol_version(std::string version) {
  protocol_version_ = std::move(version);
  if (mode_ == Mode::kStreamable && !closed_) {
    asio::co_spawn(
        io_,
        [self = shared_from_this()]() {
          return self->get_stream(std::string(), kDefaultRetryMs, std::string());
        },
        base::log_failure("remote GET stream"));
  }
}

asio::awaitable<void> Remote::end_session(std::chrono::milliseconds limit) {
  if (mode_ != Mode::kStreamable || session_id_.empty() || closed_ || failed_) co_return;
  auto self = shared_from_this();
  Running running(*this);
  transport::HttpRequest req = request(http::verb::delete_, base_);
  req.lease = transport::Lease::kUnbounded;  // stopping must not queue behind busy connections
  req.write_timeout = limit;
  req.header_timeout = limit;
  HttpExchange ex = co_await client_.send(req);
  if (co_await ex.read_header()) {
    spdlog::debug("[{}] DELETE of the session: HTTP {}", server_.name, ex.status());
  }
  ex.close();
}

asio::awaitable<void> Remote::stop() {
  auto self = shared_from_this();
  co_await end_session(server_.stop_grace);
  close();
  boost::system::error_code ec;
  for (auto waited = 0ms; running_ > 0 && waited < server_.stop_grace; waited += 5ms) {
    base::Timer tick(io_, clock_, 5ms);
    co_await tick.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

void Remote::close() {
  closed_ = true;
  queue_.clear();
  client_.close();
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
  if (stateless_) learn_header_marks(message, header_marks_);
  if (handlers_.on_message) handlers_.on_message(message);
}

void Remote::answer_error(const Outgoing& m, const std::string& message) {
  if (m.id.empty()) {
    spdlog::warn("[{}] {}", server_.name, message);
    return;
  }
  if (!closed_ && handlers_.on_lost_answer) handlers_.on_lost_answer(m.id, message);
}

asio::awaitable<void> Remote::send_loop() {
  auto self = shared_from_this();
  Running running(*this);
  while (!queue_.empty() && !closed_) {
    if (mode_ == Mode::kLegacy && legacy_post_.target.empty()) {
      // The stream has not named its endpoint yet; close() or the endpoint wakes us.
      error_code ec;
      co_await endpoint_known_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    Outgoing m = std::move(queue_.front());
    queue_.pop_front();
    const transport::Url& to = mode_ == Mode::kLegacy ? legacy_post_ : base_;
    transport::HttpRequest req = request(http::verb::post, to);
    req.body = m.body;  // a copy: a probe that falls back to the legacy transport resends m
    if (m.stateless) add_stateless_headers(req.headers, m.method, m.name, protocol_version_);
    if (m.stateless && m.method == "tools/call")
      add_param_headers(req.headers, req.body, m.name, header_marks_);
    // Waits while max_connections answers are streaming; resends once on a stale connection.
    HttpExchange ex = co_await client_.send(std::move(req));
    if (closed_) break;
    if (ex.failed()) {
      fail(describe(ex.error()));
      break;
    }
    if (m.call_id && handlers_.on_sent) handlers_.on_sent(m.call_id);
    asio::co_spawn(
        io_,
        [self, ex = std::move(ex), m = std::move(m)]() mutable {
          return self->read_response(std::move(ex), std::move(m));
        },
        base::log_failure("remote response read"));
  }
  sending_ = false;
}

asio::awaitable<Remote::BodyEnd> Remote::read_events(HttpExchange& ex, transport::SseReader& events,
                                                     const EventHandler& on_event) {
  BodyEnd end;
  bool go_on = true;
  base::HeldBytes& held = base::held_answer_bytes();
  while (go_on && !ex.done()) {
    // Clients hold too many answers unread: the server's next events wait in the connection.
    while (held.over() && !closed_) co_await held.until_under();
    const std::string_view bytes = co_await ex.read_some();
    if (closed_) co_return end;
    if (ex.failed()) {
      end.error = reason_of(ex.error());
      co_return end;
    }
    events.feed_events(bytes, [&](std::string_view type, std::string data) {
      if (go_on) go_on = on_event(type, std::move(data));
    });
    if (events.buffered() > server_.max_line_bytes) {
      end.too_long = true;
      ex.close();
      co_return end;
    }
  }
  co_return end;
}

asio::awaitable<void> Remote::read_response(HttpExchange ex, Outgoing m) {
  auto self = shared_from_this();
  Running running(*this);
  const bool got_header = co_await ex.read_header();
  if (closed_) co_return;
  if (!got_header) {
    fail(describe(ex.error()));
    co_return;
  }
  Answer a;
  a.status = ex.status();
  a.reason = ex.reason();
  if (m.initialize && mode_ != Mode::kLegacy) {
    if (std::string id = ex.header("Mcp-Session-Id"); !id.empty()) session_id_ = std::move(id);
  }
  const std::string content_type = ex.header("Content-Type");
  a.sse = content_type.starts_with("text/event-stream");
  a.json_body = content_type.starts_with("application/json");
  if (a.sse) {
    transport::SseReader events;
    const EventHandler on_event = [&](std::string_view type, std::string data) {
      if (type != "" && type != "message") return true;
      if (!a.answered && !m.id.empty()) {
        const json::Envelope env = json::parse_envelope(data);
        a.answered = env.kind == json::Kind::kResponse && env.id.in(data) == m.id;
      }
      deliver(data);
      return true;
    };
    a.end = co_await read_events(ex, events, on_event);
    a.last_event_id = events.last_id();
    a.retry_ms = events.retry_ms();
  } else if (a.json_body || a.status >= 400) {
    base::HeldBytes& held = base::held_answer_bytes();
    while (held.over() && !closed_) co_await held.until_under();
    if (!co_await ex.read_body(a.body, server_.max_line_bytes)) {
      a.end.too_long = ex.error().step == HttpStep::kTooLong;
      a.end.error = reason_of(ex.error());
    }
  } else {
    while (!ex.done() && !ex.failed() && !closed_) co_await ex.read_some();
    if (ex.failed()) a.end.error = reason_of(ex.error());
  }
  if (failed_ || closed_) co_return;
  conclude(std::move(m), a);
}

void Remote::conclude(Outgoing m, const Answer& a) {
  if (a.end.too_long) {
    fail(fmt::format("it sent a message longer than max_line_bytes ({})", server_.max_line_bytes));
    return;
  }
  if (a.status == 404 && !session_id_.empty() && mode_ != Mode::kLegacy) {
    // The server forgot our session (restart, expiry): a new instance initializes a new one.
    fail("it no longer knows the MCP session (HTTP 404); starting a new session");
    return;
  }
  if (m.initialize && mode_ == Mode::kProbing &&
      (a.status == 400 || a.status == 404 || a.status == 405)) {
    // Not Streamable HTTP: try the legacy HTTP+SSE transport on the same URL.
    spdlog::info("[{}] {} answered HTTP {} to initialize; trying the legacy HTTP+SSE transport",
                 server_.name, where(), a.status);
    mode_ = Mode::kLegacy;
    queue_.push_front(std::move(m));
    asio::co_spawn(
        io_, [self = shared_from_this()]() { return self->legacy_stream(); }, base::log_failure("remote legacy SSE stream"));
    spawn_send_loop();
    return;
  }
  if (m.initialize && mode_ == Mode::kProbing && a.status >= 200 && a.status < 300) {
    mode_ = Mode::kStreamable;
  }
  if (m.stateless && a.json_body && a.status >= 400 && is_error_answer(m.id, a.body)) {
    // 2026-07-28 answers its own errors (UnsupportedProtocolVersion, HeaderMismatch) with a
    // 4xx status and the JSON-RPC error as the body: the caller needs its code and data.
    deliver(a.body);
    return;
  }
  if (a.status >= 400 || a.status < 200) {
    std::string text = a.body.substr(0, kErrorBodyBytes);
    std::replace(text.begin(), text.end(), '\n', ' ');
    answer_error(m, fmt::format("{} answered HTTP {} {}{}{}", where(), a.status, a.reason,
                                text.empty() ? "" : ": ", text));
    return;
  }
  if (!a.end.error.empty() && !a.sse) {
    fail("the connection to " + where() + " broke during its answer (" + a.end.error + ")");
    return;
  }
  if (a.json_body && !a.body.empty()) {
    if (a.body.front() == '[') {
      // A batch: each element is one message, passed on as the server wrote it.
      if (auto items = json::split_batch(a.body)) {
        for (const auto& item : *items) deliver(item);
      }
    } else {
      deliver(a.body);
    }
    return;
  }
  if (a.sse && !a.answered && !m.id.empty()) {
    if (!a.last_event_id.empty()) {
      // The server closed the stream early but gave an event id: resume it (SEP-1699).
      const long retry = a.retry_ms >= 0 ? a.retry_ms : kDefaultRetryMs;
      asio::co_spawn(
          io_,
          [self = shared_from_this(), id = a.last_event_id, retry, awaiting = m.id]() {
            return self->get_stream(id, retry, awaiting);
          },
          base::log_failure("remote GET stream"));
    } else {
      answer_error(m, where() + " closed the response stream before answering" +
                          (a.end.error.empty() ? std::string() : " (" + a.end.error + ")"));
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
      base::Timer wait(io_, clock_, std::chrono::milliseconds(retry_ms));
      error_code wec;
      co_await wait.async_wait(asio::redirect_error(asio::use_awaitable, wec));
      if (closed_) co_return;
    }
    transport::HttpRequest req = request(http::verb::get, base_);
    if (!last_event_id.empty()) req.headers.emplace_back("Last-Event-ID", last_event_id);
    req.lease = transport::Lease::kOwn;
    HttpExchange ex = co_await client_.send(req);
    const bool got_header = co_await ex.read_header();  // false at once if send failed
    if (closed_) co_return;
    if (!got_header) {
      const transport::HttpError& e = ex.error();
      fail(before_sending(e)
               ? describe(e)
               : "the event stream from " + where() + " broke (" + reason_of(e) + ")");
      co_return;
    }
    const int status = ex.status();
    if (status == 404 && !session_id_.empty()) {
      fail("it no longer knows the MCP session (HTTP 404); starting a new session");
      co_return;
    }
    if (status != 200 || !ex.header("Content-Type").starts_with("text/event-stream")) {
      ex.close();
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
    const EventHandler on_event = [&](std::string_view type, std::string data) {
      if (type != "" && type != "message") return true;
      if (resuming && !answered) {
        const json::Envelope env = json::parse_envelope(data);
        answered = env.kind == json::Kind::kResponse && env.id.in(data) == awaiting;
      }
      deliver(data);
      return !answered;  // a resumption ends with its answer
    };
    const BodyEnd end = co_await read_events(ex, events, on_event);
    ex.close();
    if (closed_ || failed_) co_return;
    if (end.too_long) {
      fail(
          fmt::format("it sent a message longer than max_line_bytes ({})", server_.max_line_bytes));
      co_return;
    }
    if (answered) co_return;
    if (!events.last_id().empty()) last_event_id = events.last_id();
    if (events.retry_ms() >= 0) retry_ms = events.retry_ms();
  }
}

base::Status Remote::on_legacy_event(std::string_view type, std::string data) {
  if (type == "endpoint") {
    // Relative to the stream's URL; it must stay on the same origin.
    boost::urls::url_view base(server_.url);
    auto ref = boost::urls::parse_uri_reference(data);
    boost::urls::url out;
    if (!ref.has_value() || !boost::urls::resolve(base, *ref, out).has_value() ||
        out.host_address() != base.host_address() || out.port() != base.port() ||
        out.scheme() != base.scheme()) {
      return base::fail(
          "the legacy SSE stream named an endpoint on another origin or not a URL: '" +
          data.substr(0, 200) + "'");
    }
    legacy_post_ = base_;
    legacy_post_.target = std::string(out.encoded_target());
    endpoint_known_.cancel();
  } else if (type.empty() || type == "message") {
    deliver(data);
  }
  return {};
}

asio::awaitable<void> Remote::legacy_stream() {
  auto self = shared_from_this();
  Running running(*this);
  transport::HttpRequest req = request(http::verb::get, base_);
  req.lease = transport::Lease::kOwn;
  HttpExchange ex = co_await client_.send(req);
  const bool got_header = co_await ex.read_header();  // false at once if send failed
  if (closed_) co_return;
  if (!got_header) {
    const transport::HttpError& e = ex.error();
    fail(before_sending(e)
             ? describe(e)
             : "the legacy SSE stream from " + where() + " broke (" + reason_of(e) + ")");
    co_return;
  }
  const int status = ex.status();
  const std::string content_type = ex.header("Content-Type");
  if (status != 200 || !content_type.starts_with("text/event-stream")) {
    ex.close();
    fail(
        fmt::format("{} is neither a Streamable HTTP nor a legacy SSE endpoint (GET answered "
                    "HTTP {}{})",
                    where(), status, content_type.empty() ? "" : ", " + content_type));
    co_return;
  }
  transport::SseReader events;
  base::Status handled;  // a failure stops the reading
  const EventHandler on_event = [&](std::string_view type, std::string data) {
    handled = on_legacy_event(type, std::move(data));
    return handled.ok();
  };
  const BodyEnd end = co_await read_events(ex, events, on_event);
  ex.close();
  if (closed_ || failed_) co_return;
  if (!handled) {
    fail(handled.error());
    co_return;
  }
  if (end.too_long) {
    fail(fmt::format("it sent a message longer than max_line_bytes ({})", server_.max_line_bytes));
    co_return;
  }
  fail("the legacy SSE stream from " + where() + " ended" +
       (end.error.empty() ? std::string() : " (" + end.error + ")"));
}

}  // namespace toolbridge::upstream
