#include "frontend/legacy_sse.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/url/parse.hpp>

#include "base/spawn.h"
#include "frontend/client_identity.h"
#include "frontend/event_stream.h"
#include "frontend/router.h"
#include "frontend/surface_key.h"
#include "frontend/trajectory_key.h"
#include "gateway/methods.h"
#include "json/envelope.h"

namespace toolbridge::frontend {

using gateway::PostStream;
using gateway::Session;

namespace asio = boost::asio;
namespace http = boost::beast::http;
using transport::Exchange;

namespace {

constexpr auto kKeepalive = std::chrono::seconds(15);
constexpr auto kHangupPoll = std::chrono::seconds(1);

std::string error_body(std::string_view message) {
  return json::make_error({}, json::kInvalidRequest, message);
}

// The sessionId query parameter of a /messages target, empty if absent or malformed.
std::string session_param(std::string_view target) {
  auto url = boost::urls::parse_origin_form(target);
  if (!url) return {};
  auto params = url->params();
  for (auto it = params.begin(); it != params.end(); ++it) {
    const auto p = *it;
    if (p.key == "sessionId" || p.key == "session_id") return std::string(p.value);
  }
  return {};
}

}  // namespace

asio::awaitable<void> LegacySse::handle(Exchange& ex, std::string_view path,
                                        std::string_view trajectory) {
  const auto method = ex.request().method();
  if (path == "/sse" && method == http::verb::get) {
    co_await open_stream(ex, trajectory);
    co_return;
  }
  if (path == "/messages" && method == http::verb::post) {
    co_await post_message(ex);
    co_return;
  }
  const transport::Headers allow{{"Allow", path == "/sse" ? "GET" : "POST"}};
  const std::string answer =
      error_body(path == "/sse" ? "GET /sse opens the legacy HTTP+SSE stream"
                                : "POST /messages?sessionId=ID carries one JSON-RPC message");
  co_await ex.reply(http::status::method_not_allowed, "application/json", answer, allow);
}

asio::awaitable<void> LegacySse::open_stream(Exchange& ex, std::string_view path_trajectory) {
  // A client probing the endpoint (Accept: application/json) is told at once, not kept waiting
  // on a stream it will not read.
  if (header(ex.request(), "Accept").find("text/event-stream") == std::string_view::npos) {
    const std::string answer = error_body(
        "Not Acceptable: GET /sse opens an SSE stream; Accept must include "
        "text/event-stream");
    co_await ex.reply(http::status::not_acceptable, "application/json", answer, {});
    co_return;
  }
  base::Expected<std::string> owner = owner_of(ex);
  const base::Expected<std::string> trajectory = named_trajectory(ex.request(), path_trajectory);
  base::Expected<std::string> surface = std::string();
  // The trajectory's refusal first, then the owner's, then the surface's.
  std::string refused;
  if (!trajectory) {
    refused = trajectory.error();
  } else if (!owner) {
    refused = owner.error();
  } else if (surface = named_surface(ex.request(), {}, gateway_.surfaces()); !surface) {
    refused = surface.error();
  } else if (!trajectory->empty()) {
    // The same ownership rule as _meta["toolbridge/session"], checked before a session exists.
    if (base::Status claimed = gateway_.claim_trajectory(*trajectory, *owner); !claimed)
      refused = claimed.error();
  }
  if (!refused.empty()) {
    co_await ex.reply(http::status::bad_request, "application/json", error_body(refused), {});
    co_return;
  }
  base::Expected<std::shared_ptr<gateway::Session>> created = gateway_.create_session(ex.client());
  if (!created) {
    const transport::Headers retry_after{{"Retry-After", "5"}};
    co_await ex.reply(http::status::service_unavailable, "application/json",
                      error_body(created.error()), retry_after);
    co_return;
  }
  std::shared_ptr<gateway::Session> session = std::move(*created);
  session->owner = std::move(*owner);
  session->principal = ex.principal;
  session->trajectory = *trajectory;
  session->surface = *surface;
  // Legacy clients speak the oldest version we know until initialize says otherwise.
  session->version = mcp::Version::k2025_03_26;
  session->serves_tasks = false;  // its POSTs go to the method table, which has no task methods
  auto channel = std::make_shared<gateway::Channel>(gateway_.io());
  session->get_stream = channel;
  spdlog::debug("legacy SSE session {} opened", session->id());
  bool ok = co_await ex.begin_stream(http::status::ok, "text/event-stream", {});
  if (ok) {
    std::string first = "event: endpoint\ndata: /messages?sessionId=" + session->id() + "\n\n";
    ok = co_await ex.write_chunk(std::move(first));
  }
  if (ok) {
    // The stream is the session, so a client that hung up is noticed within a second.
    const PumpOptions options{
        kHangupPoll, kKeepalive, [this] { return gateway_.stopping(); },
        [session, &clock = gateway_.clock()] { session->last_seen = clock.now(); }};
    ok = co_await pump_events(ex, *channel, gateway_.clock(), options);
  }
  if (ok) co_await ex.end_stream();
  if (channel->overflowed) {
    spdlog::warn("legacy SSE session {}: closed, the client read too slowly", session->id());
  }
  channel->closed = true;
  // On this transport the stream is the session: when it goes, so do its calls.
  gateway_.end_session(session, "the agent closed its SSE stream");
}

asio::awaitable<void> LegacySse::post_message(Exchange& ex) {
  const auto& req = ex.request();
  const std::string_view target(req.target().data(), req.target().size());
  const std::string id = session_param(target);
  auto session = id.empty() ? nullptr : gateway_.find_session(id);
  if (session && session->principal != ex.principal) session = nullptr;  // another key's
  if (!session || !session->get_stream || session->get_stream->closed) {
    const std::string answer = error_body(
        id.empty() ? "POST /messages needs ?sessionId= from the endpoint event of GET /sse"
                   : "Session not found: its SSE stream is closed; open GET /sse again");
    co_await ex.reply(id.empty() ? http::status::bad_request : http::status::not_found,
                      "application/json", answer, {});
    co_return;
  }
  const std::string_view content_type = header(req, "Content-Type");
  if (!content_type.empty() && content_type.find("application/json") == std::string::npos) {
    co_await ex.reply(http::status::unsupported_media_type, "application/json",
                      error_body("Content-Type must be application/json"), {});
    co_return;
  }
  base::Status allowed;
  if (const base::Expected<std::string> named = named_trajectory(req, {}); !named)
    allowed = base::Unexpected{named.error()};
  else
    allowed = check_session_trajectory(session->trajectory, *named);
  if (allowed) {
    if (const base::Expected<std::string> surface = named_surface(req, {}, gateway_.surfaces());
        !surface)
      allowed = base::Unexpected{surface.error()};
    else
      allowed = check_session_surface(session->surface, *surface);
  }
  if (!allowed) {
    const std::string refusal = allowed.error();
    co_await ex.reply(http::status::bad_request, "application/json", error_body(refusal), {});
    co_return;
  }
  const std::string& body = req.body();
  if (json::is_batch(body)) {
    co_await ex.reply(
        http::status::bad_request, "application/json",
        error_body("JSON-RPC batches are not supported on /messages; send one message per POST"),
        {});
    co_return;
  }
  const json::Envelope env = json::parse_envelope(body);
  if (env.kind == json::Kind::kInvalid) {
    const bool parse = env.problem.starts_with("not JSON");
    const std::string answer =
        json::make_error({}, parse ? json::kParseError : json::kInvalidRequest, env.problem);
    co_await ex.reply(http::status::bad_request, "application/json", answer, {});
    co_return;
  }
  session->last_seen = gateway_.clock().now();
  // The POST only hands the message over; everything it causes goes out on the SSE stream, so
  // the stream cannot answer inline (can_stream = false sends notifications to the session).
  auto stream = std::make_shared<PostStream>(gateway_.io(), session, false);
  gateway_.methods().handle(session, stream, env, body);
  if (env.kind == json::Kind::kRequest)
    asio::co_spawn(gateway_.io(), deliver(session, stream), base::log_failure("legacy SSE delivery"));
  co_await ex.reply(http::status::accepted, "text/plain", std::string("Accepted"), {});
}

asio::awaitable<void> LegacySse::deliver(std::shared_ptr<Session> session,
                                         std::shared_ptr<PostStream> stream) {
  std::size_t sent = 0;
  for (;;) {
    for (; sent < stream->responses.size(); ++sent) {
      if (!session->push_unsolicited(stream->responses[sent])) {
        stream->detached = true;  // the stream is gone: later answers are dropped
        co_return;
      }
    }
    if (stream->finished()) break;
    stream->channel.wake(gateway_.clock()).expires_at(base::Timer::never());
    boost::system::error_code ec;
    co_await stream->channel.wake(gateway_.clock())
        .async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  stream->detached = true;
}

}  // namespace toolbridge::frontend
