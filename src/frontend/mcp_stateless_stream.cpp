// The answers of stateless (2026-07-28) requests that wait: a call's outcome or its
// input_required result, and subscriptions/listen streams.
#include <spdlog/spdlog.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "frontend/client_identity.h"
#include "frontend/event_stream.h"
#include "frontend/mcp_stateless.h"
#include "gateway/methods.h"
#include "json/envelope.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace bj = boost::json;
namespace http = boost::beast::http;
using gateway::Conversation;
using transport::Exchange;

namespace {

constexpr auto kKeepalive = std::chrono::seconds(15);

asio::awaitable<void> wait(gateway::Channel& channel, const base::Clock& clock,
                           base::Clock::duration most) {
  channel.wake(clock).expires_after(most);
  boost::system::error_code ec;
  co_await channel.wake(clock).async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

// The response re-addressed to the request that is being answered now.
std::string readdressed(std::string response, std::string_view id) {
  const json::Envelope env = json::parse_envelope(response);
  if (env.id.in(response) == id) return response;
  return json::with_id(response, env.id, id);
}

// The final message of an exchange: a JSON body, or the last event of a begun stream.
asio::awaitable<void> finish(Exchange& ex, bool streaming, std::string body) {
  if (streaming) {
    std::string event = sse_event(body);
    if (co_await ex.write_chunk(std::move(event))) co_await ex.end_stream();
    co_return;
  }
  const json::Envelope env = json::parse_envelope(body);
  int code = 0;
  if (!env.error.empty()) {
    const std::string_view e = env.error.in(body);
    const auto at = e.find("\"code\":");
    if (at != std::string_view::npos) code = std::atoi(std::string(e.substr(at + 7, 8)).c_str());
  }
  const auto status = static_cast<http::status>(mcp::http_status_for(code));
  co_await ex.reply(status, "application/json", std::move(body), {});
}

}  // namespace

asio::awaitable<void> McpStateless::answer(Exchange& ex, std::shared_ptr<Conversation> conv,
                                           std::string id) {
  const int round = ++conv->round;
  // A client that hangs up while its call runs (not while it is parked between rounds) cancels it.
  ex.on_peer_closed([this, weak = std::weak_ptr<Conversation>(conv), round] {
    auto c = weak.lock();
    if (!c || c->round != round || c->parked || c->detached || !c->task_id.empty()) return;
    c->detached = true;
    c->refuse_all("the agent disconnected");
    if (c->session) gateway_.methods().abandon(c->session, c, "the agent disconnected");
  });
  bool streaming = false;
  const auto task_after = gateway_.clock().now() + kTaskWindow;
  for (;;) {
    // Events first: notifications the server sent before its answer go out before it.
    if (!conv->channel.queue.empty()) {
      if (!streaming) {
        const bool began = co_await ex.begin_stream(http::status::ok, "text/event-stream", {});
        if (!began) break;
        streaming = true;
      }
      std::string chunk;
      drain_events(conv->channel, chunk);
      if (!co_await ex.write_chunk(std::move(chunk))) break;
      continue;
    }
    if (!conv->responses.empty()) {
      std::string body = with_result_type(readdressed(std::move(conv->responses.front()), id));
      if (conv->method == "resources/read") {
        body = with_result_members(std::move(body), R"("ttlMs":0,"cacheScope":"private")");
        // 2026-07-28 names a missing resource -32602 (SEP-2164); handshake servers said -32002.
        constexpr std::string_view kOld = R"("code":-32002)";
        if (const auto at = body.find(kOld); at != std::string::npos)
          body.replace(at, kOld.size(), R"("code":-32602)");
      }
      conv->responses.clear();
      conv->detached = true;
      co_await finish(ex, streaming, std::move(body));
      co_return;
    }
    if (conv->finished()) {  // cancelled: nothing came back
      conv->detached = true;
      std::string body = json::make_error(id, json::kInternalError, "the call was cancelled");
      co_await finish(ex, streaming, std::move(body));
      co_return;
    }
    if (conv->has_asks()) {
      base::Timer gather(gateway_.io(), gateway_.clock(), kGatherWindow);
      boost::system::error_code ec;
      co_await gather.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (!conv->responses.empty() || !conv->has_asks()) continue;
      const std::string state = input_required_.park(conv);
      std::string body = json::make_result(id, conv->input_required_result(state));
      co_await finish(ex, streaming, std::move(body));
      co_return;
    }
    if (conv->may_become_task) {
      const auto now = gateway_.clock().now();
      if (now >= task_after) {
        std::string body = become_task(conv, id);
        co_await finish(ex, streaming, std::move(body));
        co_return;
      }
      co_await wait(conv->channel, gateway_.clock(), task_after - now);
      continue;
    }
    co_await wait(conv->channel, gateway_.clock(), kKeepalive);
    if (streaming && conv->channel.queue.empty() && conv->responses.empty() && !conv->has_asks()) {
      std::string comment = ": keep-alive\n\n";
      if (!co_await ex.write_chunk(std::move(comment))) break;
    }
  }
  // The connection broke mid-stream.
  if (!conv->task_id.empty()) co_return;  // a task runs on without its client
  conv->detached = true;
  conv->refuse_all("the agent disconnected");
  if (conv->session) gateway_.methods().abandon(conv->session, conv, "the agent disconnected");
}

asio::awaitable<void> McpStateless::listen(Exchange& ex, Request& r) {
  if (!r.accepts_sse) {
    std::string body = json::make_error(r.id, json::kInvalidRequest,
                                        "Not Acceptable: subscriptions/listen answers with an "
                                        "event stream; Accept must include text/event-stream");
    co_await ex.reply(http::status::not_acceptable, "application/json", std::move(body), {});
    co_return;
  }
  // Only tools/list_changed is announced by the gateway (its catalog of tools changes).
  const bj::value* filter = r.params.if_contains("notifications");
  const bool tools = filter && filter->is_object() &&
                     filter->as_object().contains("toolsListChanged") &&
                     filter->as_object().at("toolsListChanged") == true;
  auto channel = std::make_shared<gateway::Channel>(gateway_.io());
  const std::string meta = R"({")" + std::string(mcp::kSubscriptionIdMeta) + R"(":)" + r.id + "}";
  const auto task_ids = follow_tasks(ex, r, channel, meta);
  if (!task_ids) {
    const std::string why = "notifications.taskIds needs the " + std::string(kTasksExtension) +
                            " extension declared in clientCapabilities";
    const std::string data =
        R"({"requiredCapabilities":{"extensions":{")" + std::string(kTasksExtension) + R"(":{}}}})";
    std::string body = json::make_error(r.id, mcp::kMissingClientCapability, why, data);
    const auto status =
        static_cast<http::status>(mcp::http_status_for(mcp::kMissingClientCapability));
    co_await ex.reply(status, "application/json", std::move(body), {});
    co_return;
  }
  base::Expected<std::string> owner = owner_of(ex);
  base::Expected<std::shared_ptr<gateway::Session>> created =
      !owner ? base::fail(owner.error()) : gateway_.create_session(ex.client());
  if (!created) {
    const transport::Headers retry{{"Retry-After", "5"}};
    std::string body = json::make_error(r.id, json::kOverloaded, created.error());
    co_await ex.reply(http::status::service_unavailable, "application/json", std::move(body),
                      retry);
    co_return;
  }
  std::shared_ptr<gateway::Session> session = std::move(*created);
  session->owner = std::move(*owner);
  session->initialized = true;  // so the gateway's broadcasts reach its stream
  session->get_stream = channel;
  std::string agreed;  // the ack's notifications: what this stream will carry
  if (tools) agreed = R"("toolsListChanged":true)";
  const bj::value* filter_ids =
      filter && filter->is_object() ? filter->as_object().if_contains("taskIds") : nullptr;
  if (filter_ids) {
    bj::array ids;
    for (const auto& id : *task_ids) ids.emplace_back(id);
    agreed += std::string(agreed.empty() ? "" : ",") + R"("taskIds":)" + bj::serialize(ids);
  }
  std::string ack =
      json::make_notification("notifications/subscriptions/acknowledged",
                              R"({"_meta":)" + meta + R"(,"notifications":{)" + agreed + "}}");
  bool ok = co_await ex.begin_stream(http::status::ok, "text/event-stream", {});
  std::string first = sse_event(ack);
  if (ok) ok = co_await ex.write_chunk(std::move(first));
  while (ok && !gateway_.stopping() && !channel->closed && !ex.peer_closed()) {
    std::string chunk;
    while (!channel->queue.empty()) {
      const std::string message = channel->pop();
      const json::Envelope env = json::parse_envelope(message);
      if (tools && env.method == "notifications/tools/list_changed") {
        chunk += sse_event(json::make_notification(env.method, R"({"_meta":)" + meta + "}"));
      } else if (env.method == "notifications/tasks") {  // made for this stream (follow_tasks)
        chunk += sse_event(message);
      }
    }
    if (!chunk.empty()) ok = co_await ex.write_chunk(std::move(chunk));
    if (!ok) break;
    // Messages pushed while the write was in flight woke no one: look again before waiting.
    if (!channel->queue.empty()) continue;
    co_await wait(*channel, gateway_.clock(), kKeepalive);
    std::string comment = ": keep-alive\n\n";
    if (channel->queue.empty()) ok = co_await ex.write_chunk(std::move(comment));
  }
  if (ok) co_await ex.end_stream();
  channel->closed = true;
  gateway_.end_session(session, "the subscriptions/listen stream closed");
}

}  // namespace toolbridge::frontend
