// MCP 2026-07-28 servers ask for input by answering a call with `resultType: input_required`
// instead of sending requests. The instance asks the call's sink, as it does for a handshake
// server's requests (the sink decides how: a request on a handshake session, or an
// input_required round of the gateway's own for a stateless agent), then sends the call again
// with `inputResponses` and the server's `requestState`, round after round, within the call's
// one deadline.
#include <fmt/format.h>

#include <boost/json.hpp>
#include <memory>

#include "json/parse.h"
#include "mcp/revision.h"
#include "upstream/instance.h"

namespace toolbridge::upstream {

namespace bj = boost::json;

namespace {

// A server that keeps asking is cut off: each round is a round trip to a person or a model.
constexpr int kMaxInputRounds = 16;
constexpr std::size_t kMaxInputRequests = 16;
constexpr std::size_t kMaxInputKeyBytes = 256;

bool askable(std::string_view method) {
  return method == "elicitation/create" || method == "sampling/createMessage" ||
         method == "roots/list";
}

// Why `result` is not an input_required result the gateway can act on; empty if it is.
std::string check_input_required(const bj::value& result) {
  const bj::object* r = result.if_object();
  if (!r) return "its input_required result is not an object";
  const bj::value* state = r->if_contains("requestState");
  if (state && !state->is_string()) return "its requestState is not a string";
  const bj::value* requests = r->if_contains("inputRequests");
  if (requests && !requests->is_object()) return "its inputRequests is not an object";
  const std::size_t count = requests ? requests->as_object().size() : 0;
  if (!state && count == 0) return "its input_required result has neither inputRequests nor state";
  if (count > kMaxInputRequests) {
    return fmt::format("it asked for {} inputs at once (at most {})", count, kMaxInputRequests);
  }
  if (!requests) return std::string();
  for (const auto& [key, request] : requests->as_object()) {
    if (key.empty() || key.size() > kMaxInputKeyBytes) return "an inputRequests key is malformed";
    const bj::object* q = request.if_object();
    const bj::value* method = q ? q->if_contains("method") : nullptr;
    if (!method || !method->is_string() || !askable(method->as_string())) {
      return "inputRequests[" + json::quote(key) +
             "] is not an elicitation/create, sampling/createMessage or roots/list request";
    }
    const bj::value* params = q->if_contains("params");
    if (params && !params->is_object() && !params->is_null()) {
      return "inputRequests[" + json::quote(key) + "].params is not an object";
    }
  }
  return std::string();
}

// The request's params as the agent's side sees them: the server's key rides in _meta, so a
// stateless agent is asked under the same key (the sink removes it otherwise).
std::string params_for_agent(const bj::object& request, std::string_view key) {
  bj::object params;
  if (const bj::value* p = request.if_contains("params"); p && p->is_object()) {
    params = p->as_object();
  }
  bj::value& meta = params["_meta"];
  if (!meta.is_object()) meta = bj::object();
  meta.as_object()[mcp::kInputKeyMeta] = key;
  return bj::serialize(params);
}

}  // namespace

// The answers of one round, filled as the agent's replies come.
struct InputRound {
  bj::object responses;
  bj::value state;  // the server's requestState (a string), null if it sent none
  std::size_t outstanding = 0;
  bool failed = false;
};

bool Instance::asks_for_input(std::string_view line, const json::Envelope& env) const {
  // Only a 2026-07-28 server answers this way; the substring test spares a scan of every
  // other (possibly large) result.
  if (!stateless_ || env.result.empty()) return false;
  const std::string_view result = env.result.in(line);
  if (result.find("input_required") == std::string_view::npos) return false;
  const auto members = json::object_members(result);
  if (!members) return false;
  for (const auto& m : *members) {
    if (m.name == "resultType") return m.value.in(result) == R"("input_required")";
  }
  return false;
}

void Instance::ask_for_input(Pending p, std::string_view result_text) {
  boost::system::error_code ec;
  bj::value result = json::parse(result_text, ec);
  std::string problem = ec ? "its input_required result is not JSON" : check_input_required(result);
  if (problem.empty() && ++p.input_rounds > kMaxInputRounds) {
    problem = fmt::format("it still asked for input after {} rounds", kMaxInputRounds);
  }
  if (!problem.empty()) {
    p.sink->on_response(json::make_error(p.caller_id, json::kInternalError,
                                         fmt::format("{}: server '{}' cannot be answered: {}",
                                                     p.display_name, server_.name, problem)));
    if (in_flight() == 0 && on_idle) on_idle();
    return;
  }
  const bj::object& r = result.as_object();
  auto round = std::make_shared<InputRound>();
  if (const bj::value* s = r.if_contains("requestState")) round->state = *s;
  const bj::value* requests = r.if_contains("inputRequests");
  round->outstanding = requests ? requests->as_object().size() : 0;

  // The retry is a new request (the revision wants a new id); the call keeps its deadline
  // (`expires` moves with it; the instance's deadline sweep finds it under the new id).
  const std::uint64_t id = next_id_++;
  p.awaiting_input = true;
  auto sink = p.sink;
  pending_.emplace(id, std::move(p));
  if (round->outstanding == 0) {
    send_with_input(id, *round);
    return;
  }
  for (const auto& [key, request] : requests->as_object()) {
    if (round->failed) break;  // an earlier answer already ended the call
    const bj::object& q = request.as_object();
    std::string method(q.at("method").as_string());
    sink->on_server_request(method, params_for_agent(q, key),
                            [weak = weak_from_this(), id, round, key = std::string(key), method](
                                bool is_error, std::string raw) {
                              auto self = weak.lock();
                              if (!self || round->failed) return;
                              boost::system::error_code ec;
                              bj::value answer = json::parse(raw, ec);
                              if (is_error || ec || !answer.is_object()) {
                                round->failed = true;
                                self->fail_input(id, method, ec ? bj::value() : std::move(answer));
                                return;
                              }
                              round->responses[key] = std::move(answer);
                              if (--round->outstanding == 0) self->send_with_input(id, *round);
                            });
  }
}

void Instance::send_with_input(std::uint64_t id, const InputRound& round) {
  auto it = pending_.find(id);
  if (it == pending_.end() || !it->second.awaiting_input) return;  // timed out or cancelled
  Pending& p = it->second;
  boost::system::error_code ec;
  bj::value params = json::parse(p.params.empty() ? std::string_view("{}") : p.params, ec);
  if (ec || !params.is_object()) params = bj::object();
  bj::object& o = params.as_object();
  if (!round.responses.empty()) o["inputResponses"] = round.responses;
  if (round.state.is_string()) o["requestState"] = round.state;
  if (!p.progress_token.empty()) {
    // Progress of this round comes under this round's id.
    bj::value& meta = o["_meta"];
    if (!meta.is_object()) meta = bj::object();
    meta.as_object()["progressToken"] = id;
  }
  p.awaiting_input = false;
  p.sent = false;
  last_call_id_ = id;
  write(json::make_request(std::to_string(id), p.method, bj::serialize(params)), id);
}

void Instance::fail_input(std::uint64_t id, const std::string& method, bj::value error) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  // The agent's own error (say MissingRequiredClientCapability) is passed on with its code:
  // a stateless server has no way to receive it.
  int code = json::kInternalError;
  std::string why = "its answer was not a result object";
  std::string data;
  if (const bj::object* e = error.if_object()) {
    if (const bj::value* c = e->if_contains("code"); c && c->is_int64()) {
      code = static_cast<int>(c->as_int64());
    }
    if (const bj::value* m = e->if_contains("message"); m && m->is_string()) {
      why = std::string(m->as_string());
    }
    if (const bj::value* d = e->if_contains("data")) data = bj::serialize(*d);
  }
  p.sink->on_response(json::make_error(
      p.caller_id, code,
      fmt::format("{}: server '{}' asked for {} and the agent's side could not answer: {}",
                  p.display_name, server_.name, method, why),
      data));
  if (in_flight() == 0 && on_idle) on_idle();
}

}  // namespace toolbridge::upstream
