#include "gateway/session.h"

#include <boost/json.hpp>
#include <utility>

#include "json/envelope.h"
#include "json/parse.h"
#include "mcp/revision.h"

namespace toolbridge::gateway {

namespace {

// The key a 2026-07-28 server (or the fixture) names its question by is for stateless agents;
// a handshake agent gets the request as a handshake server would send it.
std::string without_input_key(std::string params) {
  if (params.find(mcp::kInputKeyMeta) == std::string::npos) return params;
  boost::system::error_code ec;
  boost::json::value p = json::parse(params, ec);
  if (ec || !p.is_object()) return params;
  auto* meta = p.as_object().if_contains("_meta");
  if (!meta || !meta->is_object()) return params;
  meta->as_object().erase(mcp::kInputKeyMeta);
  if (meta->as_object().empty()) p.as_object().erase("_meta");
  return boost::json::serialize(p);
}

}  // namespace

void PostStream::on_response(std::string message) {
  if (outstanding > 0) --outstanding;
  if (detached) {
    // The agent hung up before the answer came; it is dropped, as the spec allows.
    return;
  }
  responses.push_back(std::move(message));
  channel.notify();
}

void PostStream::on_notification(std::string message) {
  if (!detached && can_stream_) {
    channel.push(std::move(message));
    if (on_first_event) std::exchange(on_first_event, nullptr)();
    return;
  }
  if (auto s = session_.lock()) s->push_unsolicited(std::move(message));
}

void PostStream::on_server_request(const std::string& method, std::string params, Reply reply) {
  auto session = session_.lock();
  if (!session) {
    reply(true, R"({"code":-32603,"message":"the agent session that made this call has ended"})");
    return;
  }
  // Never send a client what it did not negotiate.
  const auto& caps = session->caps;
  std::string missing;
  if (method == "sampling/createMessage" && !caps.sampling) missing = "sampling";
  if (method == "elicitation/create" &&
      (!caps.elicitation || !mcp::has_elicitation(session->version))) {
    missing = "elicitation";
  }
  if (method == "roots/list" && !caps.roots) missing = "roots";
  if (!missing.empty()) {
    reply(true,
          R"({"code":-32601,"message":)" +
              json::quote("the agent's MCP client did not declare the " + missing + " capability") +
              "}");
    return;
  }
  const std::int64_t id = session->register_outbound(std::move(reply));
  std::string message =
      json::make_request(std::to_string(id), method, without_input_key(std::move(params)));
  if (!detached && can_stream_) {
    channel.push(std::move(message));
    if (on_first_event) std::exchange(on_first_event, nullptr)();
  } else if (!session->push_unsolicited(std::move(message))) {
    session->answer_outbound(
        std::to_string(id), true,
        R"({"code":-32603,"message":)" +
            json::quote("the agent has no open stream to receive " + method +
                        " (accept text/event-stream on POST, or open a GET stream)") +
            "}");
  }
}

bool Session::push_unsolicited(std::string message) {
  if (!get_stream || get_stream->closed) return false;
  get_stream->push(std::move(message));
  return true;
}

std::int64_t Session::register_outbound(upstream::CallSink::Reply reply) {
  // An agent that never answers must not grow the table: past the cap the oldest request is
  // answered for it (the server gets an error it can act on).
  if (outbound_.size() >= kMaxOutbound) {
    auto oldest = outbound_.begin();
    auto stale = std::move(oldest->second);
    outbound_.erase(oldest);
    const std::string why = "the agent did not answer this request (more than " +
                            std::to_string(kMaxOutbound) + " newer requests are waiting for it)";
    stale(true, R"({"code":-32603,"message":)" + json::quote(why) + "}");
  }
  const std::int64_t id = next_outbound_++;
  outbound_.emplace(id, std::move(reply));
  return id;
}

bool Session::answer_outbound(std::string_view id_text, bool is_error, std::string raw) {
  std::int64_t id = 0;
  if (id_text.empty() || id_text.size() > 18) return false;  // ours are small; no overflow
  for (char c : id_text) {
    if (c < '0' || c > '9') return false;
    id = id * 10 + (c - '0');
  }
  auto it = outbound_.find(id);
  if (it == outbound_.end()) return false;
  auto reply = std::move(it->second);
  outbound_.erase(it);
  reply(is_error, std::move(raw));
  return true;
}

void Session::fail_all_outbound(const std::string& why) {
  auto pending = std::move(outbound_);
  outbound_.clear();
  for (auto& [id, reply] : pending) {
    reply(true, R"({"code":-32603,"message":)" + json::quote(why) + "}");
  }
}

}  // namespace toolbridge::gateway
