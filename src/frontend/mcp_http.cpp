#include "frontend/mcp_http.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <optional>

#include "call/trace_context.h"
#include "frontend/client_identity.h"
#include "frontend/event_stream.h"
#include "frontend/router.h"
#include "frontend/surface_key.h"
#include "frontend/trajectory_key.h"
#include "gateway/methods.h"
#include "mcp/protocol.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using gateway::Session;
using transport::Exchange;
using transport::Headers;

namespace {

constexpr auto kSseKeepalive = std::chrono::seconds(15);

// The Accept and Content-Type rules of a POST; empty if they hold, else the 406/415 message.
std::pair<http::status, std::string> check_media_types(const transport::Request& req,
                                                       bool& accepts_sse) {
  const std::string_view accept = header(req, "Accept");
  accepts_sse = accept.find("text/event-stream") != std::string::npos;
  const bool accepts_json = accept.empty() ||
                            accept.find("application/json") != std::string::npos ||
                            accept.find("*/*") != std::string::npos;
  if (!accepts_sse && !accepts_json) {
    return {http::status::not_acceptable,
            "Not Acceptable: Accept must include application/json and/or text/event-stream"};
  }
  const std::string_view content_type = header(req, "Content-Type");
  if (!content_type.empty() && content_type.find("application/json") == std::string::npos) {
    return {http::status::unsupported_media_type,
            "Unsupported Media Type: Content-Type must be application/json"};
  }
  return {http::status::ok, {}};
}

}  // namespace

base::Status McpHttp::transport_refusal(const transport::Request& req,
                                        std::string_view path_trajectory,
                                        std::string_view path_surface,
                                        const Session& session) const {
  const base::Expected<std::string> named = named_trajectory(req, path_trajectory);
  if (!named) return base::Unexpected{named.error()};
  if (base::Status same = check_session_trajectory(session.trajectory, *named); !same) return same;
  const base::Expected<std::string> surface = named_surface(req, path_surface, gateway_.surfaces());
  if (!surface) return base::Unexpected{surface.error()};
  return check_session_surface(session.surface, *surface);
}

McpHttp::Messages McpHttp::read_messages(const std::string& body) {
  Messages m;
  m.batch = json::is_batch(body);
  if (m.batch) {
    auto parts = json::split_batch(body);
    if (!parts) {
      m.error = json::make_error({}, json::kParseError, "Parse error: " + parts.error());
      return m;
    }
    if (parts->empty()) {
      m.error = json::make_error({}, json::kInvalidRequest, "Invalid Request: empty batch");
      return m;
    }
    m.texts = std::move(*parts);
    for (const auto& t : m.texts) m.envelopes.push_back(json::parse_envelope(t));
    return m;
  }
  m.envelopes.push_back(json::parse_envelope(body));
  const json::Envelope& first = m.envelopes.front();
  // Too deep but with a readable id: answered by the method table, under that id.
  const bool answerable = first.too_deep && !first.id.empty();
  if (first.kind == json::Kind::kInvalid && !answerable) {
    const bool parse = first.problem.starts_with("not JSON");
    const std::string message = (parse ? "Parse error: " : "Invalid Request: ") + first.problem;
    m.error = json::make_error({}, parse ? json::kParseError : json::kInvalidRequest, message);
  }
  return m;
}

McpHttp::SessionOrError McpHttp::session_for(const transport::Exchange& ex, const Messages& m,
                                             std::string_view body,
                                             std::string_view path_trajectory,
                                             std::string_view path_surface) {
  const auto& req = ex.request();
  SessionOrError out;
  const json::Envelope& first = m.envelopes.front();
  const base::Expected<std::string> named = named_trajectory(req, path_trajectory);
  const base::Expected<std::string> named_on =
      named ? named_surface(req, path_surface, gateway_.surfaces())
            : base::Expected<std::string>(std::string());
  if (!named || !named_on) {
    out.status = http::status::bad_request;
    out.error = json::make_error(m.batch ? std::string_view() : first.id.in(body),
                                 json::kInvalidParams, !named ? named.error() : named_on.error());
    return out;
  }
  const std::string& trajectory = *named;
  const std::string& surface = *named_on;
  if (!m.batch && first.kind == json::Kind::kRequest && first.method == "initialize") {
    base::Expected<std::string> owner = owner_of(ex);
    if (!owner) {
      out.status = http::status::bad_request;
      out.error = json::make_error(first.id.in(body), json::kInvalidRequest, owner.error());
      return out;
    }
    // The same ownership rule as _meta["toolbridge/session"], checked before a session exists.
    if (!trajectory.empty()) {
      if (base::Status claimed = gateway_.claim_trajectory(trajectory, *owner); !claimed) {
        out.status = http::status::bad_request;
        out.error = json::make_error(first.id.in(body), json::kInvalidParams, claimed.error());
        return out;
      }
    }
    base::Expected<std::shared_ptr<gateway::Session>> session =
        gateway_.create_session(ex.client());
    if (!session) {
      out.status = http::status::service_unavailable;
      const int code = gateway_.stopping() ? json::kUpstreamUnavailable : json::kOverloaded;
      out.error = json::make_error(first.id.in(body), code, session.error());
      if (!gateway_.stopping()) out.headers.emplace_back("Retry-After", "5");
      return out;
    }
    out.session = std::move(*session);
    out.session->owner = std::move(*owner);
    out.session->principal = ex.principal;
    out.session->trajectory = trajectory;
    out.session->surface = surface;
    out.headers.emplace_back("Mcp-Session-Id", out.session->id());
    return out;
  }
  const std::string_view session_id = header(req, "Mcp-Session-Id");
  out.status = http::status::bad_request;
  if (session_id.empty()) {
    out.error =
        json::make_error({}, json::kInvalidRequest,
                         "Bad Request: Mcp-Session-Id header is required (send initialize first)");
    return out;
  }
  out.session = gateway_.find_session(session_id);
  if (out.session && out.session->principal != ex.principal)
    out.session = nullptr;  // another key's
  if (!out.session) {
    out.status = http::status::not_found;
    const std::string why =
        unknown_session_message(session_id, gateway_.config().gateway.gateway_id);
    out.error = json::make_error({}, json::kInvalidRequest, why);
    return out;
  }
  base::Status same = check_session_trajectory(out.session->trajectory, trajectory);
  if (same) same = check_session_surface(out.session->surface, surface);
  if (!same) {
    out.error = json::make_error({}, json::kInvalidParams, same.error());
    return out;
  }
  // The spec rejects only invalid or unsupported versions; the session keeps the negotiated one.
  const std::string_view version = header(req, "MCP-Protocol-Version");
  const std::string negotiated(mcp::to_string(out.session->version));
  if (!version.empty() && !mcp::parse_version(version)) {
    out.error = json::make_error({}, json::kInvalidRequest,
                                 "Bad Request: unsupported MCP-Protocol-Version '" +
                                     std::string(version) + "' (negotiated: " + negotiated + ")");
    return out;
  }
  if (m.batch && !mcp::allows_batches(out.session->version)) {
    out.error =
        json::make_error({}, json::kInvalidRequest,
                         "JSON-RPC batches are not allowed in protocol version " + negotiated);
    return out;
  }
  out.status = http::status::ok;
  return out;
}

McpHttp::Accepted McpHttp::accept_post(const Exchange& ex, std::string_view trajectory,
                                       std::string_view surface) {
  const auto& req = ex.request();
  Accepted out;
  bool accepts_sse = false;
  const auto [media_status, media_error] = check_media_types(req, accepts_sse);
  if (!media_error.empty()) {
    out.status = media_status;
    out.error = json::make_error({}, json::kInvalidRequest, media_error);
    return out;
  }
  const std::string& body = req.body();
  Messages messages = read_messages(body);
  if (!messages.error.empty()) {
    out.status = http::status::bad_request;
    out.error = std::move(messages.error);
    return out;
  }
  SessionOrError found = session_for(ex, messages, body, trajectory, surface);
  out.headers = std::move(found.headers);
  if (!found.error.empty()) {
    out.status = found.status;
    out.error = std::move(found.error);
    return out;
  }
  out.session = std::move(found.session);
  out.session->last_seen = gateway_.clock().now();
  out.stream = std::make_shared<gateway::PostStream>(gateway_.io(), out.session, accepts_sse);
  // A malformed traceparent is ignored, as W3C Trace Context says a receiver must.
  if (const std::string_view tp = header(req, call::kTraceparent); call::valid_traceparent(tp))
    out.stream->traceparent = std::string(tp);
  out.batch = messages.batch;
  if (!messages.batch &&
      session_tasks_.cancels_task(*out.session, messages.envelopes.front(), body)) {
    return out;  // nothing owed: 202
  }
  if (!messages.batch && SessionTasks::claims(*out.session, messages.envelopes.front(), body)) {
    out.task = out.owed = true;
    return out;
  }
  for (std::size_t i = 0; i < messages.envelopes.size(); ++i) {
    const json::Envelope& env = messages.envelopes[i];
    if (env.kind == json::Kind::kRequest || env.kind == json::Kind::kInvalid) out.owed = true;
    const std::string_view text =
        messages.batch ? std::string_view(messages.texts[i]) : std::string_view(body);
    gateway_.methods().handle(out.session, out.stream, env, text,
                              messages.batch ? nullptr : &out.call);
  }
  return out;
}

asio::awaitable<void> McpHttp::post(Exchange& ex, std::string_view trajectory,
                                    std::string_view surface) {
  if (McpStateless::claims(ex.request())) {
    if (!surface.empty() || !header(ex.request(), kSurfaceHeader).empty()) {
      // Not yet: the stateless revision has no session to hold the surface.
      const std::string body = json::make_error(
          {}, json::kInvalidRequest,
          "tool surfaces are served to sessions (protocol 2025-11-25 and earlier), not yet to "
          "the 2026-07-28 stateless revision");
      co_await ex.reply(http::status::bad_request, "application/json", body, {});
      co_return;
    }
    co_await stateless_.post(ex, trajectory);
    co_return;
  }
  // Everything up to the wait for answers is done outside this coroutine: its frame stays small.
  Accepted a = accept_post(ex, trajectory, surface);
  if (!a.error.empty()) {
    co_await ex.reply(a.status, "application/json", std::move(a.error), a.headers);
    co_return;
  }
  if (a.task) {
    co_await session_tasks_.handle(ex, a.session, a.headers);
    co_return;
  }
  if (!a.owed) {
    a.stream->detached = true;
    co_await ex.reply(http::status::accepted, "", std::string(), a.headers);
    co_return;
  }
  // A client that hangs up before its answer frees its calls' slots at once. (The callback is
  // posted: it may run after this coroutine has ended.)
  ex.on_peer_closed([this, weak_session = std::weak_ptr<Session>(a.session),
                     weak_stream = std::weak_ptr<gateway::PostStream>(a.stream)] {
    auto s = weak_session.lock();
    auto st = weak_stream.lock();
    if (s && st) gateway_.methods().abandon(s, st, "the agent disconnected");
  });
  if (!a.call) {
    co_await answer(ex, a.stream, a.batch, a.headers);
    co_return;
  }
  // A POST of one call runs it here (no spawn, no wake-up when it ends). The events the call
  // sends meanwhile are written by answer() in a writer the first one starts; its state lives
  // in this frame, which outlives it: the writer is awaited below.
  struct Writer {
    McpHttp& self;
    Exchange& ex;
    const Accepted& a;
    bool running = false;
    std::optional<base::Timer> done;
    void start() {
      running = true;
      done.emplace(self.gateway_.io(), self.gateway_.clock());
      asio::co_spawn(self.gateway_.io(), self.answer(ex, a.stream, false, a.headers),
                     [this](const std::exception_ptr& failure) {
                       if (failure) spdlog::error("a POST's event stream failed");
                       running = false;
                       done->cancel();
                     });
    }
  } writer{*this, ex, a};
  a.stream->on_first_event = [&writer] { writer.start(); };
  std::exception_ptr failure;
  call::Result result;
  try {
    result = co_await gateway_.pipeline().run(*a.call);
  } catch (...) {
    failure = std::current_exception();
  }
  a.stream->on_first_event = nullptr;
  gateway::Methods::settle(a.session, *a.stream, *a.call, failure, std::move(result));
  if (!writer.done) {
    co_await answer(ex, a.stream, false, a.headers);
    co_return;
  }
  while (writer.running) {
    boost::system::error_code ec;
    co_await writer.done->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

asio::awaitable<void> McpHttp::answer(Exchange& ex, std::shared_ptr<gateway::PostStream> stream,
                                      bool batch, const Headers& headers) {
  // JSON if every response is ready before anything else needs sending; otherwise the answer
  // turns into an SSE stream the moment a notification or server request has to go out.
  bool streaming = false;
  std::size_t sent = 0;
  for (;;) {
    const bool quiet = stream->channel.queue.empty();
    if (!streaming && quiet && stream->finished()) {
      if (stream->responses.empty()) {
        // Every request of this POST was cancelled by the agent: nothing is owed (MCP sends no
        // response to a cancelled request).
        co_await ex.reply(http::status::accepted, "", std::string(), headers);
        co_return;
      }
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
    if (!streaming && !quiet && stream->can_stream()) {
      const bool began = co_await ex.begin_stream(http::status::ok, "text/event-stream", headers);
      if (!began) break;
      streaming = true;
    }
    if (streaming) {
      std::string chunk;
      drain_events(stream->channel, chunk);
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
    stream->channel.wake(gateway_.clock()).expires_at(base::Timer::never());
    if (stream->channel.queue.empty() &&
        !(stream->finished() || (streaming && sent < stream->responses.size()))) {
      boost::system::error_code ec;
      co_await stream->channel.wake(gateway_.clock())
          .async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }
  stream->detached = true;
}

asio::awaitable<void> McpHttp::get(Exchange& ex, std::string_view trajectory,
                                   std::string_view surface) {
  const auto& req = ex.request();
  if (McpStateless::claims(req)) {
    co_await stateless_.not_allowed(ex);
    co_return;
  }
  if (header(req, "Accept").find("text/event-stream") == std::string::npos) {
    const std::string body = json::make_error(
        {}, json::kInvalidRequest,
        "Not Acceptable: GET /mcp opens an SSE stream; Accept must include text/event-stream");
    co_await ex.reply(http::status::not_acceptable, "application/json", body, {});
    co_return;
  }
  const std::string id(header(req, "Mcp-Session-Id"));
  auto session = gateway_.find_session(id);
  if (session && session->principal != ex.principal) session = nullptr;  // another key's
  if (!session) {
    const bool missing = id.empty();
    const std::string body = json::make_error(
        {}, json::kInvalidRequest,
        missing ? "Bad Request: Mcp-Session-Id header is required" : "Session not found");
    const auto status = missing ? http::status::bad_request : http::status::not_found;
    co_await ex.reply(status, "application/json", body, {});
    co_return;
  }
  if (base::Status allowed = transport_refusal(req, trajectory, surface, *session); !allowed) {
    const std::string body = json::make_error({}, json::kInvalidParams, allowed.error());
    co_await ex.reply(http::status::bad_request, "application/json", body, {});
    co_return;
  }
  // A reconnecting client replaces its previous stream.
  if (session->get_stream) session->get_stream->close();
  auto channel = std::make_shared<gateway::Channel>(gateway_.io());
  session->get_stream = channel;
  if (co_await ex.begin_stream(http::status::ok, "text/event-stream", {})) {
    // An SSE comment first, so the client sees the stream open at once.
    std::string opened = ": stream open\n\n";
    bool ok = co_await ex.write_chunk(std::move(opened));
    if (ok) {
      const PumpOptions options{
          kSseKeepalive, kSseKeepalive, [this] { return gateway_.stopping(); },
          [session, &clock = gateway_.clock()] { session->last_seen = clock.now(); }};
      ok = co_await pump_events(ex, *channel, gateway_.clock(), options);
    }
    if (ok) co_await ex.end_stream();
  }
  if (channel->overflowed) {
    spdlog::warn("session {}: GET stream closed, the client read too slowly ({} bytes queued)",
                 session->id(), gateway::Channel::kMaxQueuedBytes);
  }
  channel->closed = true;
  if (session->get_stream == channel) session->get_stream.reset();
}

asio::awaitable<void> McpHttp::del(Exchange& ex, std::string_view trajectory,
                                   std::string_view surface) {
  if (McpStateless::claims(ex.request())) {
    co_await stateless_.not_allowed(ex);
    co_return;
  }
  const std::string id(header(ex.request(), "Mcp-Session-Id"));
  auto session = gateway_.find_session(id);
  if (session && session->principal != ex.principal) session = nullptr;  // another key's
  if (!session) {
    const std::string body = json::make_error(
        {}, json::kInvalidRequest,
        id.empty() ? "Bad Request: Mcp-Session-Id header is required" : "Session not found");
    const auto status = id.empty() ? http::status::bad_request : http::status::not_found;
    co_await ex.reply(status, "application/json", body, {});
    co_return;
  }
  if (base::Status allowed = transport_refusal(ex.request(), trajectory, surface, *session);
      !allowed) {
    const std::string body = json::make_error({}, json::kInvalidParams, allowed.error());
    co_await ex.reply(http::status::bad_request, "application/json", body, {});
    co_return;
  }
  // The session ends; a trajectory it was opened for lives on (the next session may name it).
  session_tasks_.ending(*session);
  gateway_.end_session(session, "the agent ended its session");
  co_await ex.reply(http::status::ok, "application/json", std::string("{}"), {});
}

}  // namespace toolbridge::frontend
