#include "gateway/gateway.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>

#include "json/envelope.h"
#include "transport/session_id.h"
#include "transport/local_origin.h"

namespace toolbridge::gateway {

namespace asio = boost::asio;
namespace bj = boost::json;
namespace http = boost::beast::http;
using namespace std::chrono_literals;
using transport::Exchange;
using transport::Headers;

namespace {

constexpr auto kSseKeepalive = 15s;
constexpr auto kSweepInterval = 30s;
// params._meta key by which a caller shortens its own deadline, in milliseconds.
constexpr std::string_view kTimeoutMeta = "toolbridge/timeout_ms";
// params._meta key naming the trajectory a call belongs to (per_session affinity).
constexpr std::string_view kSessionMeta = "toolbridge/session";

constexpr std::string_view kSessionsPath = "/sessions/";

std::string percent_decode(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string sse_event(std::string_view message) {
  std::string out = "event: message\ndata: ";
  out += message;
  out += "\n\n";
  return out;
}

std::string header(const transport::Request& req, std::string_view name) {
  auto it = req.find(name);
  return it == req.end() ? std::string() : std::string(it->value());
}

bj::object parse_object(std::string_view text) {
  if (text.empty()) return {};
  boost::system::error_code ec;
  bj::value v = bj::parse(text, ec);
  if (ec || !v.is_object()) return {};
  return std::move(v.as_object());
}

std::string member_string(const bj::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

}  // namespace

Gateway::Gateway(asio::io_context& io, config::Config config)
    : io_(io),
      config_(std::move(config)),
      gate_(io, config_.gateway.start_concurrency),
      http_(io,
            transport::HttpServerOptions{config_.gateway.host, config_.gateway.port,
                                         config_.gateway.max_body_bytes},
            [this](Exchange& ex) { return handle_http(ex); }),
      sweep_(io) {
  session_dir_root_ = config_.gateway.session_dir_root;
  if (session_dir_root_.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    session_dir_root_ = fmt::format("{}/toolbridge-{}", tmp && *tmp ? tmp : "/tmp", ::getpid());
  }
  for (const auto& s : config_.servers) {
    auto up = std::make_shared<upstream::Upstream>(io_, s, gate_, metrics_, session_dir_root_);
    up->on_catalog_changed = [this]() { rebuild_catalog(); };
    upstreams_.push_back(std::move(up));
  }
  register_metrics();
  legacy_ = std::make_unique<LegacySse>(
      io_, LegacyHooks{
               [this](std::string& refused) -> std::shared_ptr<Session> {
                 if (stopping_) refused = "the gateway is shutting down";
                 if (sessions_.size() >= config_.gateway.max_sessions) {
                   refused = "too many sessions (gateway.max_sessions = " +
                             std::to_string(config_.gateway.max_sessions) + "); retry later";
                 }
                 return refused.empty() ? create_session() : nullptr;
               },
               [this](std::string_view id) -> std::shared_ptr<Session> {
                 auto it = sessions_.find(std::string(id));
                 return it == sessions_.end() ? nullptr : it->second;
               },
               [this](const std::shared_ptr<Session>& s, const std::string& why) { end_session(s, why); },
               [this](const std::shared_ptr<Session>& s, const std::shared_ptr<PostStream>& stream,
                      std::string_view message) { dispatch(s, stream, message); },
               [this] { return stopping_; }});
}

Gateway::~Gateway() = default;

void Gateway::register_metrics() {
  metrics_.describe("toolbridge_calls_total", "counter",
                    "Requests forwarded to servers, by server, tool (or method) and outcome "
                    "(ok, tool_error, error).");
  metrics_.describe("toolbridge_call_duration_seconds", "histogram",
                    "Gateway-observed latency of forwarded requests.");
  metrics_.describe("toolbridge_restarts_total", "counter", "Server instance restarts.");
  metrics_.describe("toolbridge_start_failures_total", "counter", "Failed server start attempts.");
  metrics_.describe("toolbridge_recycles_total", "counter",
                    "Instances retired on purpose, by reason (max_calls, max_age, max_rss, idle).");
  metrics_.gauge("toolbridge_in_flight", "Requests currently forwarded and unanswered, by server.",
                 [this](auto& out) {
                   for (const auto& up : upstreams_) {
                     out.emplace_back(telemetry::labels({{"server", up->name()}}),
                                      static_cast<double>(up->in_flight()));
                   }
                 });
  metrics_.gauge("toolbridge_instances",
                 "Server instances by state (starting, idle, busy, retiring).", [this](auto& out) {
                   for (const auto& up : upstreams_) {
                     const auto c = up->census();
                     for (const auto& [state, n] : {std::pair{"starting", c.starting},
                                                    std::pair{"idle", c.idle}, std::pair{"busy", c.busy},
                                                    std::pair{"retiring", c.retiring}}) {
                       out.emplace_back(telemetry::labels({{"server", up->name()}, {"state", state}}),
                                        static_cast<double>(n));
                     }
                   }
                 });
  metrics_.gauge("toolbridge_spares", "Ready instances waiting for a new session (per_session) or call (pool).",
                 [this](auto& out) {
                   for (const auto& up : upstreams_) {
                     out.emplace_back(telemetry::labels({{"server", up->name()}}),
                                      static_cast<double>(up->census().spares));
                   }
                 });
  metrics_.gauge("toolbridge_sessions_bound", "Sessions holding their own instance (per_session).",
                 [this](auto& out) {
                   for (const auto& up : upstreams_) {
                     out.emplace_back(telemetry::labels({{"server", up->name()}}),
                                      static_cast<double>(up->census().sessions));
                   }
                 });
  metrics_.gauge("toolbridge_sessions", "Open downstream MCP sessions.", [this](auto& out) {
    out.emplace_back("", static_cast<double>(sessions_.size()));
  });
  metrics_.gauge("toolbridge_tools", "Tools in the aggregated catalog.", [this](auto& out) {
    out.emplace_back("", static_cast<double>(catalog_.tool_count()));
  });
}

std::string Gateway::start() {
  if (std::string err = http_.listen(); !err.empty()) return err;
  for (const auto& up : upstreams_) asio::co_spawn(io_, up->start(), asio::detached);
  expire_sessions();
  return {};
}

asio::awaitable<void> Gateway::shutdown() {
  if (stopping_) co_return;
  stopping_ = true;
  sweep_.cancel();
  http_.stop_accepting();
  // Calls in flight may finish (their answers still reach the agents) for up to shutdown_grace.
  const auto drain_until = std::chrono::steady_clock::now() + config_.gateway.shutdown_grace;
  asio::steady_timer tick(io_);
  for (;;) {
    std::size_t in_flight = 0;
    for (const auto& up : upstreams_) in_flight += up->in_flight();
    if (in_flight == 0 || std::chrono::steady_clock::now() >= drain_until) {
      if (in_flight > 0) spdlog::warn("shutdown: {} calls still in flight after shutdown_grace", in_flight);
      break;
    }
    tick.expires_after(20ms);
    boost::system::error_code ec;
    co_await tick.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  http_.stop();
  for (auto& [id, s] : sessions_) {
    if (s->get_stream) s->get_stream->close();
    s->fail_all_outbound("the gateway is shutting down");
  }
  sessions_.clear();
  // Stop all servers at once; each is bounded by its own stop ladder.
  std::size_t remaining = upstreams_.size();
  asio::steady_timer all_done(io_, asio::steady_timer::time_point::max());
  for (const auto& up : upstreams_) {
    asio::co_spawn(io_, up->stop(), [&](std::exception_ptr) {
      if (--remaining == 0) all_done.cancel();
    });
  }
  boost::system::error_code ec;
  if (remaining > 0) co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  // Session directories went with their instances; the root goes too if nothing was kept.
  if (config_.gateway.session_dir_root.empty()) ::rmdir(session_dir_root_.c_str());
}

void Gateway::rebuild_catalog() {
  const std::size_t before = catalog_.tool_count();
  const std::string old_tools = catalog_.tools_json();
  catalog_.rebuild(upstreams_, config_.gateway.tool_naming, config_.gateway.separator);
  if (catalog_.tools_json() != old_tools) {
    spdlog::info("catalog: {} tools (was {})", catalog_.tool_count(), before);
    broadcast(json::make_notification("notifications/tools/list_changed", {}));
  }
}

void Gateway::broadcast(const std::string& message) {
  for (auto& [id, s] : sessions_) {
    if (s->initialized) s->push_unsolicited(message);
  }
}

std::size_t Gateway::release_session(const std::string& key) {
  std::size_t n = 0;
  for (const auto& up : upstreams_) n += up->release(key);
  return n;
}

void Gateway::expire_sessions() {
  // Often enough that a short session_idle_ttl is honoured within half of itself.
  const auto ttl = std::chrono::duration_cast<std::chrono::milliseconds>(config_.gateway.session_idle_ttl);
  sweep_.expires_after(std::clamp<std::chrono::milliseconds>(ttl / 2, 100ms, kSweepInterval));
  sweep_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopping_) return;
    const auto now = Session::Clock::now();
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      const auto& s = it->second;
      const bool streaming = s->get_stream && !s->get_stream->closed;
      if (!streaming && s->in_flight.empty() && now - s->last_seen > config_.gateway.session_idle_ttl) {
        spdlog::debug("session {} expired after being idle", it->first);
        s->fail_all_outbound("the session expired");
        const std::string id = it->first;
        it = sessions_.erase(it);
        release_session(id);
      } else {
        ++it;
      }
    }
    // Named trajectories outlive their connection (reward computation calls tools later) but
    // not the idle TTL.
    const auto cutoff = now - config_.gateway.session_idle_ttl;
    for (const auto& up : upstreams_) {
      up->release_idle(cutoff, [this](const std::string& key) { return sessions_.contains(key); });
    }
    expire_sessions();
  });
}

std::shared_ptr<upstream::Upstream> Gateway::find_upstream(std::string_view name) const {
  for (const auto& up : upstreams_) {
    if (up->name() == name) return up;
  }
  return nullptr;
}

std::string Gateway::health_json() const {
  bj::object servers;
  bool all_ready = true;
  for (const auto& up : upstreams_) {
    auto inst = up->any_ready();
    const auto census = up->census();
    bj::object instances{{"starting", census.starting},
                         {"idle", census.idle},
                         {"busy", census.busy},
                         {"retiring", census.retiring}};
    bj::object recycles;
    for (const auto& [reason, n] : up->recycles()) recycles[reason] = n;
    bj::array pids;
    for (pid_t pid : up->pids()) pids.push_back(pid);
    bj::object s{{"state", upstream::to_string(up->state())},
                 {"policy", config::to_string(up->config().policy)},
                 {"restarts", up->restarts()},
                 {"tools", up->catalog() ? up->catalog()->tools.size() : 0},
                 {"in_flight", up->in_flight()},
                 {"instances", std::move(instances)},
                 {"spares", census.spares},
                 {"sessions_bound", census.sessions},
                 {"recycles", std::move(recycles)},
                 {"pids", std::move(pids)}};
    if (inst) {
      s["pid"] = inst->pid();
      s["protocol_version"] = mcp::to_string(inst->version());
    }
    if (!up->last_error().empty()) s["last_error"] = up->last_error();
    if (up->state() == upstream::Upstream::State::kBackoff) s["retry_in_seconds"] = up->retry_in_seconds();
    if (up->state() != upstream::Upstream::State::kReady &&
        up->state() != upstream::Upstream::State::kDisabled) {
      all_ready = false;
    }
    servers[up->name()] = std::move(s);
  }
  bj::object out{{"status", stopping_ ? "stopping" : all_ready ? "ok" : "degraded"},
                 {"sessions", sessions_.size()},
                 {"tools", catalog_.tool_count()},
                 {"servers", std::move(servers)}};
  return bj::serialize(out);
}

bool Gateway::origin_allowed(std::string_view origin) const {
  // DNS rebinding defence: a browser page on another origin must not drive local tools.
  if (origin.empty()) return true;  // not a browser
  for (const auto& allowed : config_.gateway.allowed_origins) {
    if (origin == allowed) return true;
  }
  for (std::string_view prefix : {"http://localhost", "http://127.0.0.1", "http://[::1]",
                                  "https://localhost", "https://127.0.0.1", "https://[::1]"}) {
    if (origin.starts_with(prefix)) {
      const std::string_view rest = origin.substr(prefix.size());
      if (rest.empty() || rest.front() == ':') return true;
    }
  }
  return false;
}

std::shared_ptr<Session> Gateway::create_session() {
  auto s = std::make_shared<Session>(io_, transport::random_session_id());
  sessions_.emplace(s->id(), s);
  return s;
}

asio::awaitable<void> Gateway::handle_http(Exchange& ex) {
  const auto& req = ex.request();
  const std::string_view target(req.target().data(), req.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  const bool legacy = path == "/sse" || path == "/messages";
  if (path == "/mcp" || legacy) {
    if (!origin_allowed(header(req, "Origin"))) {
      co_await ex.reply(http::status::forbidden, "application/json",
                        json::make_error({}, json::kInvalidRequest,
                                   "Forbidden: Origin '" + header(req, "Origin") +
                                       "' is not allowed (gateway.allowed_origins)"),
                        {});
      co_return;
    }
    // DNS rebinding sends the attacker's name as Host: a loopback listener answers only to
    // loopback names and the allowed origins' hosts.
    const std::string host = header(req, "Host");
    if (transport::is_loopback_address(config_.gateway.host) && !host.empty() &&
        !transport::is_loopback_host(host) && !origin_allowed("http://" + host) &&
        !origin_allowed("https://" + host)) {
      co_await ex.reply(http::status::forbidden, "application/json",
                        json::make_error({}, json::kInvalidRequest,
                                         "Forbidden: Host '" + host + "' is not a loopback name (gateway.allowed_origins)"),
                        {});
      co_return;
    }
  }
  if (legacy) {
    co_await legacy_->handle(ex, path);
    co_return;
  }
  if (path == "/mcp") {
    switch (req.method()) {
      case http::verb::post:
        co_await handle_post(ex);
        co_return;
      case http::verb::get:
        co_await handle_get(ex);
        co_return;
      case http::verb::delete_:
        co_await handle_delete(ex);
        co_return;
      default: {
        // (Built outside co_await: GCC 12 mis-compiles braced initialisers in await expressions.)
        const Headers allow{{"Allow", "GET, POST, DELETE"}};
        co_await ex.reply(http::status::method_not_allowed, "application/json",
                          json::make_error({}, json::kInvalidRequest, "Method not allowed on /mcp"), allow);
        co_return;
      }
    }
  }
  if (path.starts_with(kSessionsPath) && path.size() > kSessionsPath.size()) {
    // Releasing a trajectory without an MCP session: the reward step of a rollout may run in
    // another process than the agent.
    const std::string name = percent_decode(path.substr(kSessionsPath.size()));
    const bool forbidden = !origin_allowed(header(req, "Origin"));
    const bool bad_method = req.method() != http::verb::delete_;
    if (forbidden || bad_method || name.empty() || name.size() > 256) {
      const auto status = forbidden    ? http::status::forbidden
                          : bad_method ? http::status::method_not_allowed
                                       : http::status::bad_request;
      const std::string body = json::make_error(
          {}, json::kInvalidRequest,
          forbidden ? "Forbidden: Origin '" + header(req, "Origin") + "' is not allowed (gateway.allowed_origins)"
                    : std::string("DELETE /sessions/NAME releases the per_session instances of session or "
                                  "trajectory NAME (1 to 256 characters, percent-encoded)"));
      co_await ex.reply(status, "application/json", body, {});
      co_return;
    }
    const std::size_t n = release_session(name);
    co_await ex.reply(http::status::ok, "application/json",
                      R"({"released":)" + std::to_string(n) + "}", {});
    co_return;
  }
  if (path == "/healthz" && req.method() == http::verb::get) {
    co_await ex.reply(http::status::ok, "application/json", health_json(), {});
    co_return;
  }
  if (path == "/metrics" && req.method() == http::verb::get) {
    co_await ex.reply(http::status::ok, "text/plain; version=0.0.4", metrics_.render(), {});
    co_return;
  }
  co_await ex.reply(http::status::not_found, "text/plain",
                    std::string("not found; MCP is served at /mcp, health at /healthz, metrics at "
                                "/metrics, trajectories are released with DELETE /sessions/NAME\n"),
                    {});
}

asio::awaitable<void> Gateway::handle_post(Exchange& ex) {
  const auto& req = ex.request();
  const std::string accept = header(req, "Accept");
  const bool accepts_sse = accept.find("text/event-stream") != std::string::npos;
  const bool accepts_json = accept.empty() || accept.find("application/json") != std::string::npos ||
                            accept.find("*/*") != std::string::npos;
  if (!accepts_sse && !accepts_json) {
    co_await ex.reply(http::status::not_acceptable, "application/json",
                      json::make_error({}, json::kInvalidRequest,
                                 "Not Acceptable: Accept must include application/json and/or "
                                 "text/event-stream"),
                      {});
    co_return;
  }
  const std::string content_type = header(req, "Content-Type");
  if (!content_type.empty() && content_type.find("application/json") == std::string::npos) {
    co_await ex.reply(http::status::unsupported_media_type, "application/json",
                      json::make_error({}, json::kInvalidRequest,
                                 "Unsupported Media Type: Content-Type must be application/json"),
                      {});
    co_return;
  }
  const std::string& body = req.body();
  const bool batch = json::is_batch(body);
  std::vector<std::string> messages;
  if (batch) {
    std::string problem;
    auto parts = json::split_batch(body, problem);
    if (!parts || parts->empty()) {
      // Built in a named local: GCC 12 destroys both branches of a ?: of std::string temporaries
      // inside a co_await expression (a `[]` body crashed the gateway).
      const std::string answer =
          parts ? json::make_error({}, json::kInvalidRequest, "Invalid Request: empty batch")
                : json::make_error({}, json::kParseError, "Parse error: " + problem);
      co_await ex.reply(http::status::bad_request, "application/json", answer, {});
      co_return;
    }
    messages = std::move(*parts);
  }
  // A single message is parsed once here, and again (cheaply) by dispatch; batches are rare.
  const json::Envelope first = json::parse_envelope(batch ? std::string_view(messages.front()) : body);
  if (!batch && first.kind == json::Kind::kInvalid) {
    const bool parse = first.problem.starts_with("not JSON");
    const std::string message = (parse ? "Parse error: " : "Invalid Request: ") + first.problem;
    const std::string answer =
        json::make_error({}, parse ? json::kParseError : json::kInvalidRequest, message);
    co_await ex.reply(http::status::bad_request, "application/json", answer, {});
    co_return;
  }

  std::shared_ptr<Session> session;
  const std::string session_id = header(req, "Mcp-Session-Id");
  Headers headers;
  if (!batch && first.kind == json::Kind::kRequest && first.method == "initialize") {
    if (stopping_) {
      co_await ex.reply(http::status::service_unavailable, "application/json",
                        json::make_error(first.id.in(body), json::kUpstreamUnavailable,
                                   "the gateway is shutting down"),
                        {});
      co_return;
    }
    if (sessions_.size() >= config_.gateway.max_sessions) {
      const Headers retry_after{{"Retry-After", "5"}};
      co_await ex.reply(http::status::service_unavailable, "application/json",
                        json::make_error(first.id.in(body), json::kOverloaded,
                                   "too many sessions (gateway.max_sessions = " +
                                       std::to_string(config_.gateway.max_sessions) +
                                       "); close idle sessions with DELETE /mcp or retry later"),
                        retry_after);
      co_return;
    }
    session = create_session();
    headers.emplace_back("Mcp-Session-Id", session->id());
  } else {
    if (session_id.empty()) {
      co_await ex.reply(http::status::bad_request, "application/json",
                        json::make_error({}, json::kInvalidRequest,
                                   "Bad Request: Mcp-Session-Id header is required (send "
                                   "initialize first)"),
                        {});
      co_return;
    }
    auto it = sessions_.find(session_id);
    if (it == sessions_.end()) {
      co_await ex.reply(http::status::not_found, "application/json",
                        json::make_error({}, json::kInvalidRequest,
                                   "Session not found: it expired or was deleted; initialize a "
                                   "new session"),
                        {});
      co_return;
    }
    session = it->second;
    // The spec rejects only invalid or unsupported versions; the session keeps the negotiated one.
    const std::string version = header(req, "MCP-Protocol-Version");
    if (!version.empty() && !mcp::parse_version(version)) {
      co_await ex.reply(http::status::bad_request, "application/json",
                        json::make_error({}, json::kInvalidRequest,
                                   "Bad Request: unsupported MCP-Protocol-Version '" + version +
                                       "' (negotiated: " + std::string(mcp::to_string(session->version)) + ")"),
                        {});
      co_return;
    }
    if (batch && !mcp::allows_batches(session->version)) {
      co_await ex.reply(http::status::bad_request, "application/json",
                        json::make_error({}, json::kInvalidRequest,
                                   "JSON-RPC batches are not allowed in protocol version " +
                                       std::string(mcp::to_string(session->version))),
                        {});
      co_return;
    }
  }
  session->last_seen = Session::Clock::now();

  auto stream = std::make_shared<PostStream>(io_, session, accepts_sse);
  if (!batch) messages.emplace_back(body);
  bool any_request = false;
  for (const auto& m : messages) {
    const json::Envelope env = json::parse_envelope(m);
    if (env.kind == json::Kind::kRequest || env.kind == json::Kind::kInvalid) any_request = true;
  }
  for (const auto& m : messages) dispatch(session, stream, m);
  if (!any_request) {
    stream->detached = true;
    co_await ex.reply(http::status::accepted, "", std::string(), {});
    co_return;
  }
  co_await answer_post(ex, stream, batch, headers);
}

asio::awaitable<void> Gateway::answer_post(Exchange& ex, std::shared_ptr<PostStream> stream,
                                           bool batch, const Headers& headers) {
  // JSON if every response is ready before anything else needs sending; otherwise the answer
  // turns into an SSE stream the moment a notification or server request has to go out.
  bool streaming = false;
  std::size_t sent = 0;
  for (;;) {
    if (!streaming && stream->channel.queue.empty() && stream->finished() &&
        stream->responses.empty()) {
      // Every request of this POST was cancelled by the agent: nothing is owed (MCP sends no
      // response to a cancelled request).
      co_await ex.reply(http::status::accepted, "", std::string(), headers);
      co_return;
    }
    if (!streaming && stream->channel.queue.empty() && stream->finished()) {
      std::string body;
      if (batch) {
        body = "[";
        for (std::size_t i = 0; i < stream->responses.size(); ++i) {
          if (i) body += ',';
          body += stream->responses[i];
        }
        body += ']';
      } else {
        body = std::move(stream->responses.front());
      }
      co_await ex.reply(http::status::ok, "application/json", std::move(body), headers);
      co_return;
    }
    if (!streaming && !stream->channel.queue.empty() && stream->can_stream()) {
      const bool began = co_await ex.begin_stream(http::status::ok, "text/event-stream", headers);
      if (!began) break;
      streaming = true;
    }
    if (streaming) {
      std::string chunk;
      while (!stream->channel.queue.empty()) chunk += sse_event(stream->channel.pop());
      for (; sent < stream->responses.size(); ++sent) chunk += sse_event(stream->responses[sent]);
      if (!chunk.empty()) {
        const bool written = co_await ex.write_chunk(std::move(chunk));
        if (!written) break;
      }
      if (stream->finished() && sent == stream->responses.size()) {
        co_await ex.end_stream();
        co_return;
      }
    }
    stream->channel.wake.expires_at(asio::steady_timer::time_point::max());
    if (stream->channel.queue.empty() && !(stream->finished() || (streaming && sent < stream->responses.size()))) {
      boost::system::error_code ec;
      co_await stream->channel.wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }
  stream->detached = true;
}

asio::awaitable<void> Gateway::handle_get(Exchange& ex) {
  const auto& req = ex.request();
  if (header(req, "Accept").find("text/event-stream") == std::string::npos) {
    co_await ex.reply(http::status::not_acceptable, "application/json",
                      json::make_error({}, json::kInvalidRequest,
                                 "Not Acceptable: GET /mcp opens an SSE stream; Accept must include "
                                 "text/event-stream"),
                      {});
    co_return;
  }
  auto it = sessions_.find(header(req, "Mcp-Session-Id"));
  if (it == sessions_.end()) {
    const bool missing = header(req, "Mcp-Session-Id").empty();
    const std::string answer = json::make_error(
        {}, json::kInvalidRequest,
        missing ? "Bad Request: Mcp-Session-Id header is required" : "Session not found");
    co_await ex.reply(missing ? http::status::bad_request : http::status::not_found,
                      "application/json", answer, {});
    co_return;
  }
  auto session = it->second;
  // A reconnecting client replaces its previous stream.
  if (session->get_stream) session->get_stream->close();
  auto channel = std::make_shared<Channel>(io_);
  session->get_stream = channel;
  const bool began = co_await ex.begin_stream(http::status::ok, "text/event-stream", {});
  if (began) {
    // An SSE comment first, so the client sees the stream open at once.
    bool ok = co_await ex.write_chunk(": stream open\n\n");
    while (ok && !channel->closed && !stopping_) {
      if (channel->queue.empty()) {
        channel->wake.expires_after(kSseKeepalive);
        boost::system::error_code ec;
        co_await channel->wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (!ec && channel->queue.empty()) {
          // Keep-alive; it also detects a client that went away without closing.
          ok = !ex.peer_closed();
          if (ok) ok = co_await ex.write_chunk(": keepalive\n\n");
          continue;
        }
      }
      std::string chunk;
      while (!channel->queue.empty()) chunk += sse_event(channel->pop());
      if (!chunk.empty()) ok = co_await ex.write_chunk(std::move(chunk));
      session->last_seen = Session::Clock::now();
    }
    if (ok) co_await ex.end_stream();
  }
  if (channel->overflowed) {
    spdlog::warn("session {}: GET stream closed, the client read too slowly ({} bytes queued)",
                 session->id(), Channel::kMaxQueuedBytes);
  }
  channel->closed = true;
  if (session->get_stream == channel) session->get_stream.reset();
}

asio::awaitable<void> Gateway::handle_delete(Exchange& ex) {
  const std::string id = header(ex.request(), "Mcp-Session-Id");
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    const std::string answer = json::make_error(
        {}, json::kInvalidRequest,
        id.empty() ? "Bad Request: Mcp-Session-Id header is required" : "Session not found");
    co_await ex.reply(id.empty() ? http::status::bad_request : http::status::not_found,
                      "application/json", answer, {});
    co_return;
  }
  end_session(it->second, "the agent ended its session");
  co_await ex.reply(http::status::ok, "application/json", std::string("{}"), {});
}

void Gateway::end_session(const std::shared_ptr<Session>& session, const std::string& why) {
  auto keep = session;  // the map may hold the last reference
  if (auto it = sessions_.find(keep->id()); it != sessions_.end() && it->second == keep) sessions_.erase(it);
  // Calls still running for this session are cancelled upstream; nobody will read them.
  for (auto& [caller_id, f] : keep->in_flight) {
    auto inst = f.instance.lock();
    auto call = f.call.lock();
    if (inst && call) inst->cancel(call, caller_id, why);
  }
  keep->in_flight.clear();
  release_session(keep->id());
  if (keep->get_stream) keep->get_stream->close();
  keep->fail_all_outbound(why);
}

void Gateway::dispatch(const std::shared_ptr<Session>& session,
                       const std::shared_ptr<PostStream>& stream, std::string_view message) {
  const json::Envelope env = json::parse_envelope(message);
  auto answer = [&](std::string response) {
    ++stream->outstanding;
    stream->on_response(std::move(response));
  };
  if (env.kind == json::Kind::kInvalid) {
    const bool parse = env.problem.starts_with("not JSON");
    answer(json::make_error({}, parse ? json::kParseError : json::kInvalidRequest, env.problem));
    return;
  }
  const std::string id(env.id.in(message));
  if (env.kind == json::Kind::kResponse) {
    // The agent answering a request a server sent through us (sampling, elicitation, roots).
    const bool is_error = !env.error.empty();
    if (!session->answer_outbound(id, is_error, std::string((is_error ? env.error : env.result).in(message)))) {
      spdlog::debug("session {}: response to unknown request {}", session->id(), id);
    }
    return;
  }
  const std::string& method = env.method;
  if (env.kind == json::Kind::kNotification) {
    if (method == "notifications/initialized") {
      session->initialized = true;
    } else if (method == "notifications/cancelled") {
      const bj::object p = parse_object(env.params.in(message));
      const auto* rid = p.if_contains("requestId");
      if (!rid) return;
      const std::string key = bj::serialize(*rid);
      auto it = session->in_flight.find(key);
      if (it == session->in_flight.end()) return;
      auto inst = it->second.instance.lock();
      auto call = it->second.call.lock();
      const std::string reason = member_string(p, "reason");
      if (call && (inst || !call->cancelled)) {
        // Sent: the server is told. Still waiting for an instance: it is never sent.
        if (inst) inst->cancel(call, key, reason.empty() ? "cancelled by the agent" : reason);
        call->cancelled = true;
        // The cancelled request gets no response; the POST that carried it is released.
        auto& s = call->stream();
        if (s->outstanding > 0) --s->outstanding;
        s->channel.wake.cancel();
      }
      session->in_flight.erase(it);
    }
    return;  // other notifications (roots/list_changed, progress) have no upstream target
  }

  // Requests.
  if (method == "initialize") {
    const bj::object p = parse_object(env.params.in(message));
    if (session->initialized) {
      answer(json::make_error(id, json::kInvalidRequest, "the session is already initialized"));
      return;
    }
    session->version = mcp::negotiate(member_string(p, "protocolVersion"));
    if (const auto* caps = p.if_contains("capabilities"); caps && caps->is_object()) {
      const auto& c = caps->as_object();
      session->caps.sampling = c.contains("sampling");
      session->caps.elicitation = c.contains("elicitation");
      session->caps.roots = c.contains("roots");
    }
    const std::string result =
        std::string(R"({"protocolVersion":")") + std::string(mcp::to_string(session->version)) +
        R"(","capabilities":{"tools":{"listChanged":true},"resources":{"listChanged":true},)"
        R"("prompts":{"listChanged":true},"logging":{},"completions":{}},)"
        R"("serverInfo":{"name":"toolbridge","version":"0.1.0"},)"
        R"("instructions":"Tools from several MCP servers, named server__tool."})";
    answer(json::make_result(id, result));
    return;
  }
  if (method == "ping") return answer(json::make_result(id, "{}"));
  if (method == "tools/list") return answer(json::make_result(id, catalog_.tools_json()));
  if (method == "prompts/list") return answer(json::make_result(id, catalog_.prompts_json()));
  if (method == "resources/list") return answer(json::make_result(id, catalog_.resources_json()));
  if (method == "resources/templates/list") return answer(json::make_result(id, catalog_.templates_json()));
  if (method == "logging/setLevel") {
    const bj::object p = parse_object(env.params.in(message));
    const int rank = mcp::log_level_rank(member_string(p, "level"));
    if (rank < 0) return answer(json::make_error(id, json::kInvalidParams, "unknown logging level"));
    session->min_log_rank = rank;
    return answer(json::make_result(id, "{}"));
  }

  if (method == "toolbridge/release") {
    // Frees a trajectory's per_session instances now (its name, or this session's own).
    const bj::object p = parse_object(env.params.in(message));
    const bj::value* named = p.if_contains("session");
    if (named && (!named->is_string() || named->as_string().empty())) {
      return answer(json::make_error(id, json::kInvalidParams, "'session' must be a non-empty string"));
    }
    const std::string key = named ? std::string(named->as_string()) : session->id();
    const std::size_t n = release_session(key);
    return answer(json::make_result(id, R"({"released":)" + std::to_string(n) + "}"));
  }

  bj::object params = parse_object(env.params.in(message));
  std::string progress_token;
  // A call may name its trajectory; per_session servers then bind to that name, not to the
  // MCP session, so one connection can drive many trajectories.
  std::string trajectory;
  if (auto* meta = params.if_contains("_meta"); meta && meta->is_object()) {
    if (const auto* t = meta->as_object().if_contains("progressToken")) progress_token = bj::serialize(*t);
    if (const auto* t = meta->as_object().if_contains(kSessionMeta)) {
      if (!t->is_string() || t->as_string().empty() || t->as_string().size() > 256) {
        return answer(json::make_error(id, json::kInvalidParams,
                                       std::string("_meta[\"") + std::string(kSessionMeta) +
                                           "\"] must be a string of 1 to 256 characters"));
      }
      trajectory = std::string(t->as_string());
      // Only tools/call and prompts/get re-serialise params; elsewhere the key travels along.
      meta->as_object().erase(kSessionMeta);
      if (meta->as_object().empty()) params.erase("_meta");
    }
  }
  if (stopping_) {
    return answer(json::make_error(id, json::kUpstreamUnavailable,
                             "the gateway is shutting down; no new calls are accepted"));
  }
  if (method == "tools/call" || method == "prompts/get") {
    const bool tool = method == "tools/call";
    const std::string name = member_string(params, "name");
    const Entry* entry = tool ? catalog_.tool(name) : catalog_.prompt(name);
    if (!entry) {
      std::string msg = std::string(tool ? "Unknown tool: " : "Unknown prompt: ") + "'" + name + "'";
      if (tool) {
        const auto close = catalog_.suggest_tools(name);
        if (!close.empty()) {
          msg += "; did you mean ";
          for (std::size_t i = 0; i < close.size(); ++i) msg += (i ? ", '" : "'") + close[i] + "'";
        }
        msg += ". tools/list shows the " + std::to_string(catalog_.tool_count()) + " available tools.";
      }
      return answer(json::make_error(id, json::kInvalidParams, msg));
    }
    params["name"] = entry->original;
    // The caller may shorten its deadline (never lengthen it past the configured one).
    std::chrono::milliseconds timeout{0};
    if (auto* meta = params.if_contains("_meta"); meta && meta->is_object()) {
      if (auto* t = meta->as_object().if_contains(kTimeoutMeta)) {
        if (t->is_number()) timeout = std::chrono::milliseconds(static_cast<long>(t->to_number<double>()));
        meta->as_object().erase(kTimeoutMeta);
        if (meta->as_object().empty()) params.erase("_meta");
      }
    }
    return forward(session, stream, entry->server, method, bj::serialize(params), id,
                   progress_token, entry->exposed, entry->exposed, tool ? entry->original : "",
                   timeout, std::move(trajectory));
  }
  if (method == "resources/read" || method == "resources/subscribe" || method == "resources/unsubscribe") {
    const std::string uri = member_string(params, "uri");
    const std::string* server = catalog_.resource_server(uri);
    if (!server) {
      return answer(json::make_error(id, -32002, "Resource not found: '" + uri + "' matches no server's resources or templates"));
    }
    return forward(session, stream, *server, method, std::string(env.params.in(message)), id,
                   progress_token, *server + " " + method, method, "", {}, trajectory);
  }
  if (method == "completion/complete") {
    auto* ref = params.if_contains("ref");
    if (ref && ref->is_object()) {
      auto& r = ref->as_object();
      const std::string type = member_string(r, "type");
      if (type == "ref/prompt") {
        if (const Entry* e = catalog_.prompt(member_string(r, "name"))) {
          r["name"] = e->original;
          return forward(session, stream, e->server, method, bj::serialize(params), id, progress_token,
                         e->server + " " + method, method, "", {}, trajectory);
        }
      } else if (type == "ref/resource") {
        if (const std::string* server = catalog_.resource_server(member_string(r, "uri"))) {
          return forward(session, stream, *server, method, bj::serialize(params), id, progress_token,
                         *server + " " + method, method, "", {}, trajectory);
        }
      }
    }
    return answer(json::make_result(id, R"({"completion":{"values":[],"total":0,"hasMore":false}})"));
  }
  answer(json::make_error(id, json::kMethodNotFound, "Method not found: " + method));
}

void Gateway::forward(const std::shared_ptr<Session>& session,
                      const std::shared_ptr<PostStream>& stream, const std::string& server,
                      std::string_view method, std::string params, std::string id,
                      std::string progress_token, const std::string& display_name,
                      const std::string& tool_label, const std::string& tool,
                      std::chrono::milliseconds requested_timeout, std::string key) {
  ++stream->outstanding;
  const auto started = std::chrono::steady_clock::now();
  auto up = find_upstream(server);
  auto call = std::make_shared<ForwardedCall>(
      stream, id, method == "tools/call",
      [this, weak = std::weak_ptr<Session>(session), id, server, tool_label,
       started](std::string_view outcome, std::string_view /*why*/) {
        const double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        metrics_.add("toolbridge_calls_total",
                     telemetry::labels({{"server", server}, {"tool", tool_label}, {"outcome", outcome}}));
        metrics_.observe("toolbridge_call_duration_seconds",
                         telemetry::labels({{"server", server}, {"tool", tool_label}}), secs);
        if (auto s = weak.lock()) s->in_flight.erase(id);
      });
  if (!up) {
    call->on_response(json::make_error(id, json::kUpstreamUnavailable, "unknown server " + server));
    return;
  }
  const auto& cfg = up->config();
  auto timeout = cfg.call_timeout;
  if (auto it = cfg.tool_timeouts.find(tool); !tool.empty() && it != cfg.tool_timeouts.end()) {
    timeout = it->second;
  }
  if (requested_timeout.count() > 0) timeout = std::min(timeout, requested_timeout);
  const auto deadline = started + timeout;
  // The session (trajectory) the call belongs to: per_session servers keep one instance per key.
  if (key.empty()) key = session->id();
  const bool idempotent =
      !tool.empty() && std::any_of(cfg.idempotent_tools.begin(), cfg.idempotent_tools.end(),
                                   [&](const std::string& t) { return t == "*" || t == tool; });
  // Retries never run a call twice unless the config says the tool may run twice, and never
  // move a per_session call to another instance (its state lives in the one it lost).
  if (cfg.max_retries > 0 && cfg.policy != config::Policy::kPerSession) {
    std::weak_ptr<ForwardedCall> weak_call = call;
    call->retry = [this, weak_call, up, weak_session = std::weak_ptr<Session>(session),
                   method = std::string(method), params, id, progress_token, display_name,
                   deadline, idempotent, key](bool sent, const std::string& why) {
      auto self = weak_call.lock();
      if (!self || stopping_ || (sent && !idempotent)) return false;
      if (static_cast<std::size_t>(self->attempts) >= up->config().max_retries) return false;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      ++self->attempts;
      spdlog::info("[{}] retrying {} (attempt {}): {}", up->name(), display_name, self->attempts + 1, why);
      asio::co_spawn(
          io_,
          [this, self, up, weak_session, method, params, id, progress_token, display_name, deadline,
           why, key]() -> asio::awaitable<void> {
            // Jittered pause, then wait for a ready instance (a restart is usually under way).
            asio::steady_timer t(io_, std::chrono::milliseconds(50 + std::rand() % 100));
            boost::system::error_code ec;
            co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            std::shared_ptr<upstream::Instance> inst;
            while (std::chrono::steady_clock::now() < deadline && !stopping_) {
              const upstream::Upstream::Pick p = co_await up->checkout(key, deadline);
              inst = p.instance;
              if (inst) break;
              t.expires_after(20ms);
              co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (!inst || left.count() <= 0) {
              self->retry = nullptr;
              self->on_response(json::make_error(
                  id, json::kUpstreamFailed,
                  why + "; retried " + std::to_string(self->attempts) +
                      " time(s) but no instance was ready before the deadline"));
              co_return;
            }
            if (auto s = weak_session.lock()) s->in_flight[id] = Session::InFlight{inst, self};
            inst->call(method, params, id, progress_token, self, left, display_name);
          },
          asio::detached);
      return true;
    };
  }
  const upstream::Upstream::Pick picked = up->pick(key);
  if (picked.instance) {
    session->in_flight[id] = Session::InFlight{picked.instance, call};
    picked.instance->call(method, std::move(params), std::move(id), std::move(progress_token), call,
                          timeout, display_name);
    return;
  }
  if (!picked.wait) {
    call->on_response(json::make_error(id, json::kUpstreamUnavailable, picked.error));
    return;
  }
  // An instance is starting for this call (the session's own, or a growing pool): wait for it
  // within the call's deadline and the server's checkout_timeout.
  session->in_flight[id] = Session::InFlight{{}, call};
  asio::co_spawn(
      io_,
      [this, call, up, weak_session = std::weak_ptr<Session>(session), method = std::string(method),
       params = std::move(params), id, progress_token = std::move(progress_token), display_name,
       deadline, timeout, key]() -> asio::awaitable<void> {
        const auto limit = std::min(deadline, std::chrono::steady_clock::now() + up->config().checkout_timeout);
        const upstream::Upstream::Pick got = co_await up->checkout(key, limit);
        if (call->cancelled) co_return;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (!got.instance) {
          call->on_response(json::make_error(id, json::kUpstreamUnavailable, got.error));
          co_return;
        }
        if (left.count() <= 0) {
          call->on_response(json::make_error(
              id, json::kRequestTimeout,
              fmt::format("{} timed out after {:g} s waiting for an instance to start", display_name,
                          static_cast<double>(timeout.count()) / 1000.0)));
          co_return;
        }
        if (auto s = weak_session.lock()) s->in_flight[id] = Session::InFlight{got.instance, call};
        got.instance->call(method, params, id, progress_token, call, left, display_name);
      },
      asio::detached);
}

}  // namespace toolbridge::gateway
