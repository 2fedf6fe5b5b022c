#include "gateway/methods.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/json.hpp>

#include "base/spawn.h"
#include "call/trace_context.h"
#include "call/trajectory_name.h"
#include "gateway/gateway.h"
#include "gateway/pipeline.h"
#include "json/nested_meta.h"
#include "json/parse.h"
#include "json/utf8.h"
#include "mcp/protocol.h"
#include "policy/authorize.h"
#include "surfaces/registry.h"
#include "surfaces/surface_stage.h"

namespace toolbridge::gateway {

namespace asio = boost::asio;
namespace bj = boost::json;

namespace {

// params._meta key by which a caller shortens its own deadline, in milliseconds.
constexpr std::string_view kTimeoutMeta = "toolbridge/timeout_ms";
// params._meta key naming the trajectory a call belongs to (per_session affinity).
constexpr std::string_view kSessionMeta = "toolbridge/session";
// params._meta key naming the run (tenant) a call belongs to, for admission control.
constexpr std::string_view kTenantMeta = "toolbridge/tenant";
// What Session::owner starts with when the client named its tenant (X-Toolbridge-Tenant).
constexpr std::string_view kTenantOwner = "tenant ";

// Why `name` cannot be a tenant (the rule of X-Toolbridge-Tenant); empty if it can.
std::string tenant_name_error(std::string_view name) {
  const bool valid =
      !name.empty() && name.size() <= 128 && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == ':' || c == '-';
      });
  return valid ? std::string() : "a tenant is 1-128 characters of [A-Za-z0-9._:-]";
}

bj::object parse_object(std::string_view text) {
  if (text.empty()) return {};
  boost::system::error_code ec;
  bj::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return {};
  return std::move(v.as_object());
}

std::string member_string(const bj::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

// result._meta (error.data of an error) key naming the class of a failed tools/call.
constexpr std::string_view kFaultMeta = "toolbridge/fault";

bool fault_is_tool_result(call::Fault f) {
  return f == call::Fault::kTimeout || f == call::Fault::kCrashed || f == call::Fault::kNotSent ||
         f == call::Fault::kUnavailable || f == call::Fault::kShed;
}

// Reads the gateway's own _meta keys into `call` and leaves call->meta without them; fails on a
// malformed key.
// `traceparent`: the POST's header, sent on in _meta unless the call's _meta has its own.
base::Status take_meta(call::Call& call, std::string_view raw_meta,
                       const std::string& traceparent) {
  boost::system::error_code ec;
  bj::value v = json::parse(raw_meta, ec);
  if (ec || !v.is_object()) return {};
  auto& meta = v.as_object();
  if (const auto* t = meta.if_contains("progressToken")) call.progress_token = bj::serialize(*t);
  bool changed = false;
  if (const auto* t = meta.if_contains(call::kTraceparent);
      t && t->is_string() && call::valid_traceparent(t->as_string())) {
    call.traceparent = std::string(t->as_string());
  } else if (!traceparent.empty()) {
    meta[call::kTraceparent] = traceparent;
    call.traceparent = traceparent;
    changed = true;
  }
  if (const auto* t = meta.if_contains(kSessionMeta)) {
    const std::string where = "_meta[\"" + std::string(kSessionMeta) + "\"]";
    if (!t->is_string())
      return base::fail(where + " must be a string; " + std::string(call::kTrajectoryNameRule));
    if (base::Status named = call::check_trajectory_name(t->as_string()); !named)
      return base::fail(where + ": " + named.error());
    call.trajectory = std::string(t->as_string());
    meta.erase(kSessionMeta);
    changed = true;
  }
  if (const auto* t = meta.if_contains(kTenantMeta)) {
    const std::string where = "_meta[\"" + std::string(kTenantMeta) + "\"]";
    const std::string why =
        t->is_string() ? tenant_name_error(t->as_string()) : tenant_name_error(std::string_view());
    if (!why.empty()) return base::fail(where + ": " + why);
    call.tenant = std::string(t->as_string());
    meta.erase(kTenantMeta);
    changed = true;
  }
  if (const auto* t = meta.if_contains(kTimeoutMeta)) {
    // The caller may shorten its deadline (never lengthen it past the configured one).
    if (t->is_number()) {
      call.requested_timeout = std::chrono::milliseconds(static_cast<long>(t->to_number<double>()));
    }
    meta.erase(kTimeoutMeta);
    changed = true;
  }
  // The stages' own keys, each read by the stage that declares it.
  for (const call::MetaKey& key : Pipeline::meta_keys()) {
    const auto* t = meta.if_contains(key.name);
    if (!t) continue;
    if (base::Status read = key.read(call, *t); !read) return read;
    meta.erase(key.name);
    changed = true;
  }
  if (changed) call.meta = meta.empty() ? std::string() : bj::serialize(meta);
  return {};
}

std::string render(const call::Call& call, call::Result result) {
  if (result.answered_by_server()) return std::move(result.response);
  if (call.is_tool_call() && fault_is_tool_result(result.fault)) {
    // The agent gets a tool result it can reason about rather than a transport failure; the
    // server's error_prefix marks it for frameworks that drop isError.
    const std::string* prefix =
        call.route.upstream ? &call.route.upstream->config().error_prefix : nullptr;
    const std::string text = prefix ? *prefix + result.why : result.why;
    const bj::object body{{"content", bj::array{bj::object{{"type", "text"}, {"text", text}}}},
                          {"isError", true}};
    return json::make_result(call.id, bj::serialize(body));
  }
  return json::make_error(call.id, error_code(result.fault), result.why);
}

}  // namespace

std::string to_jsonrpc(const call::Call& call, call::Result result) {
  const call::FaultClass fault = call::fault_class(result.fault);
  std::string response = render(call, std::move(result));
  if (!call.is_tool_call() || fault == call::FaultClass::kOk) return response;
  // Whose fault, for trainers that mask infrastructure failures (docs/faults.md).
  return json::with_response_meta(response, kFaultMeta, json::quote(to_string(fault)));
}

Methods::Methods(Gateway& gateway) : gateway_(gateway) {
  table_ = {
      {"initialize", &Methods::initialize},
      {"ping", &Methods::ping},
      {"tools/list", &Methods::tools_list},
      {"prompts/list", &Methods::prompts_list},
      {"resources/list", &Methods::resources_list},
      {"resources/templates/list", &Methods::templates_list},
      {"logging/setLevel", &Methods::set_log_level},
      {"toolbridge/release", &Methods::release},
      {"tools/call", &Methods::run_call},
      {"prompts/get", &Methods::run_call},
      {"resources/read", &Methods::run_call},
      {"resources/subscribe", &Methods::run_call},
      {"resources/unsubscribe", &Methods::run_call},
      {"completion/complete", &Methods::run_call},
  };
}

void Methods::handle(const std::shared_ptr<Session>& session,
                     const std::shared_ptr<PostStream>& stream, std::string_view message) {
  const json::Envelope env = json::parse_envelope(message);
  handle(session, stream, env, message);
}

void Methods::handle(const std::shared_ptr<Session>& session,
                     const std::shared_ptr<PostStream>& stream, const json::Envelope& env,
                     std::string_view message, std::shared_ptr<call::Call>* deferred) {
  if (env.needs_repair) {
    // Nothing a client sent is echoed raw: its invalid bytes (and lone surrogates) become U+FFFD.
    const std::string repaired = json::repair_strings(message);
    const json::Envelope fixed = json::parse_envelope(repaired);
    return handle(session, stream, fixed, repaired, deferred);
  }
  Incoming in{session, stream, env, message, std::string(env.id.in(message)), deferred};
  switch (env.kind) {
    case json::Kind::kInvalid: {
      const bool parse = env.problem.starts_with("not JSON");
      // A message too deep still gets its answer under its own id when that was readable.
      const std::string id = env.too_deep ? in.id : std::string();
      return answer(
          in, json::make_error(id, parse ? json::kParseError : json::kInvalidRequest, env.problem));
    }
    case json::Kind::kResponse: {
      // The agent answering a request a server sent through us (sampling, elicitation, roots).
      const bool is_error = !env.error.empty();
      if (!session->answer_outbound(in.id, is_error,
                                    std::string((is_error ? env.error : env.result).in(message)))) {
        spdlog::debug("session {}: response to unknown request {}", session->id(), in.id);
      }
      return;
    }
    case json::Kind::kNotification:
      return on_notification(in);
    case json::Kind::kRequest:
      break;
  }
  auto it = table_.find(env.method);
  if (it == table_.end()) {
    return answer(
        in, json::make_error(in.id, json::kMethodNotFound, "Method not found: " + env.method));
  }
  (this->*(it->second))(in);
}

void Methods::answer(const Incoming& in, std::string response) {
  ++in.stream->outstanding;
  in.stream->on_response(std::move(response));
}

void Methods::answer_when_settled(const Incoming& in, std::function<std::string()> make) {
  if (gateway_.settled()) return answer(in, make());
  ++in.stream->outstanding;
  asio::co_spawn(gateway_.io(), gateway_.until_settled(),
                 [stream = in.stream, make = std::move(make)](std::exception_ptr e) {
                   base::log_failure("the wait for the servers' start")(e);
                   stream->on_response(make());
                 });
}

void Methods::on_notification(const Incoming& in) {
  if (in.env.method == "notifications/initialized") {
    in.session->initialized = true;
  } else if (in.env.method == "notifications/cancelled") {
    on_cancelled(in);
  }
  // Other notifications (roots/list_changed, progress) have no upstream target.
}

void Methods::on_cancelled(const Incoming& in) {
  const bj::object p = parse_object(in.params());
  const auto* rid = p.if_contains("requestId");
  if (!rid) return;
  auto it = in.session->in_flight.find(bj::serialize(*rid));
  if (it == in.session->in_flight.end()) return;
  const Session::InFlight entry = it->second;
  in.session->in_flight.erase(it);
  auto call = entry.call.lock();
  if (!call || call->cancelled()) return;
  const std::string reason = member_string(p, "reason");
  // Sent: the server is told. Still waiting for an instance: it is never sent.
  call->cancel(reason.empty() ? "cancelled by the agent" : reason);
  // The cancelled request gets no response; the POST that carried it is released now.
  if (auto stream = entry.stream.lock(); stream && stream->outstanding > 0) {
    --stream->outstanding;
    stream->channel.notify();
  }
}

void Methods::abandon(const std::shared_ptr<Session>& session,
                      const std::shared_ptr<PostStream>& stream, const std::string& reason) {
  for (auto it = session->in_flight.begin(); it != session->in_flight.end();) {
    if (it->second.stream.lock() != stream) {
      ++it;
      continue;
    }
    auto call = it->second.call.lock();
    it = session->in_flight.erase(it);
    if (!call || call->cancelled()) continue;
    call->cancel(reason);
    if (stream->outstanding > 0) --stream->outstanding;
  }
  stream->channel.notify();
}

void Methods::initialize(const Incoming& in) {
  Session& session = *in.session;
  if (session.initialized) {
    return answer(
        in, json::make_error(in.id, json::kInvalidRequest, "the session is already initialized"));
  }
  const bj::object p = parse_object(in.params());
  session.version = mcp::negotiate(member_string(p, "protocolVersion"));
  if (const auto* caps = p.if_contains("capabilities"); caps && caps->is_object()) {
    const auto& c = caps->as_object();
    session.caps.sampling = c.contains("sampling");
    session.caps.elicitation = c.contains("elicitation");
    session.caps.roots = c.contains("roots");
  }
  // 2025-11-25 has tasks (SEP-1686): the gateway runs any task tool's call as one
  // (src/frontend/mcp_session_tasks.h).
  const std::string tasks =
      session.version >= mcp::Version::k2025_11_25 && session.serves_tasks
          ? R"(,"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}})"
          : "";
  const std::string result =
      std::string(R"({"protocolVersion":")") + std::string(mcp::to_string(session.version)) +
      R"(","capabilities":{"tools":{"listChanged":true},"resources":{"listChanged":true},)"
      R"("prompts":{"listChanged":true},"logging":{},"completions":{})" +
      tasks +
      "},"
      R"("serverInfo":{"name":"toolbridge","version":"0.1.0"},)"
      R"("instructions":"Tools from several MCP servers, named server__tool."})";
  answer_when_settled(in, [response = json::make_result(in.id, result)] { return response; });
}

void Methods::ping(const Incoming& in) {
  answer(in, json::make_result(in.id, "{}"));
}

void Methods::tools_list(const Incoming& in) {
  const config::ApiKey* key = in.session->principal;
  if (!in.session->surface.empty()) return surface_list(in);
  if (key && !key->allow.empty()) {
    // Only what the session's API key may call (a filtered copy: the shared list stays whole).
    return answer_when_settled(in, [this, id = in.id, key] {
      const auto& catalog = gateway_.catalog();
      return json::make_result(
          id, policy::allowed_tools_json(catalog.tools_json(), *key, [&](std::string_view name) {
            const auto* e = catalog.tool(name);
            return e ? e->server : std::string();
          }));
    });
  }
  answer_when_settled(
      in, [this, id = in.id] { return json::make_result(id, gateway_.catalog().tools_json()); });
}

void Methods::surface_list(const Incoming& in) {
  answer_when_settled(in, [this, id = in.id, name = in.session->surface,
                           key = in.session->principal] {
    auto view = gateway_.surfaces().view(name);
    if (!view) {
      return json::make_error(id, json::kInvalidParams, gateway_.surfaces().unknown_message(name));
    }
    return json::make_result(id, surfaces::allowed_tools_json(*view, key));
  });
}

void Methods::prompts_list(const Incoming& in) {
  answer_when_settled(
      in, [this, id = in.id] { return json::make_result(id, gateway_.catalog().prompts_json()); });
}

void Methods::resources_list(const Incoming& in) {
  answer_when_settled(in, [this, id = in.id] {
    return json::make_result(id, gateway_.catalog().resources_json());
  });
}

void Methods::templates_list(const Incoming& in) {
  answer_when_settled(in, [this, id = in.id] {
    return json::make_result(id, gateway_.catalog().templates_json());
  });
}

void Methods::set_log_level(const Incoming& in) {
  const bj::object p = parse_object(in.params());
  const int rank = mcp::log_level_rank(member_string(p, "level"));
  if (rank < 0)
    return answer(in, json::make_error(in.id, json::kInvalidParams, "unknown logging level"));
  in.session->min_log_rank = rank;
  answer(in, json::make_result(in.id, "{}"));
}

void Methods::release(const Incoming& in) {
  // Frees a trajectory's per_session instances now (its name, or this session's own).
  const bj::object p = parse_object(in.params());
  const bj::value* named = p.if_contains("session");
  if (named && !named->is_string()) {
    return answer(
        in, json::make_error(in.id, json::kInvalidParams, "'session' must be a non-empty string"));
  }
  if (base::Status valid = named ? call::check_trajectory_name(named->as_string()) : base::Status();
      !valid) {
    return answer(in, json::make_error(in.id, json::kInvalidParams, "'session': " + valid.error()));
  }
  const std::string& own =
      in.session->trajectory.empty() ? in.session->id() : in.session->trajectory;
  const std::string key = named ? std::string(named->as_string()) : own;
  const base::Expected<std::size_t> n = gateway_.release_for(key, in.session->owner);
  if (!n) return answer(in, json::make_error(in.id, json::kInvalidParams, n.error()));
  answer(in, json::make_result(in.id, R"({"released":)" + std::to_string(*n) + "}"));
}

base::Expected<std::shared_ptr<call::Call>> Methods::make_call(const Incoming& in) {
  auto call = std::make_shared<call::Call>();
  call->started = gateway_.clock().now();
  call->method = in.env.method;
  call->id = in.id;
  call->params = in.env.params.empty() ? std::string("{}") : std::string(in.params());
  auto members = json::object_members(call->params);
  if (!members) return base::fail("params must be a JSON object");
  call->members = std::move(*members);
  if (const std::string_view meta = call->member("_meta"); !meta.empty()) {
    if (base::Status taken = take_meta(*call, meta, in.stream->traceparent); !taken)
      return base::Unexpected{taken.error()};
  } else if (!in.stream->traceparent.empty()) {
    call->traceparent = in.stream->traceparent;
    call->meta = R"({"traceparent":)" + json::quote(call->traceparent) + "}";
  }
  // The session's URL or X-Toolbridge-Trajectory names the trajectory of all its calls; _meta may
  // repeat it but not name another (a conflict is refused, not resolved by precedence).
  const std::string& named = in.session->trajectory;
  if (!named.empty() && !call->trajectory.empty() && call->trajectory != named) {
    return base::fail("_meta[\"" + std::string(kSessionMeta) + "\"] names trajectory '" +
                      call->trajectory + "' but this session was opened for trajectory '" + named +
                      "' (URL /t/NAME/mcp or X-Toolbridge-Trajectory); name one trajectory");
  }
  if (call->trajectory.empty()) call->trajectory = named;
  // A call may name its trajectory; per_session servers then bind to that name, not to the MCP
  // session, so one connection can drive many trajectories.
  if (call->trajectory.empty()) {
    call->trajectory = in.session->id();
  } else if (base::Status claimed = gateway_.claim_trajectory(call->trajectory, in.session->owner);
             !claimed) {
    return base::Unexpected{claimed.error()};
  }
  // The run it belongs to: the API key's tenant (nothing the caller says overrides it), else
  // _meta, else the session's tenant header, else the session itself.
  call->principal = in.session->principal;
  if (call->principal) call->tenant = call->principal->tenant;
  if (call->tenant.empty()) {
    const std::string& owner = in.session->owner;
    call->tenant =
        owner.starts_with(kTenantOwner) ? owner.substr(kTenantOwner.size()) : in.session->id();
  }
  call->events = in.stream;
  if (!in.session->surface.empty()) {
    // Its tools/call names tools as the surface shows them (the surface stage).
    auto view = gateway_.surfaces().view(in.session->surface);
    if (!view) return base::fail(gateway_.surfaces().unknown_message(in.session->surface));
    surfaces::set_surface(*call, std::move(view));
  }
  return call;
}

void Methods::run_call(const Incoming& in) {
  base::Expected<std::shared_ptr<call::Call>> made = make_call(in);
  if (!made) return answer(in, json::make_error(in.id, json::kInvalidParams, made.error()));
  std::shared_ptr<call::Call> call = std::move(*made);
  ++in.stream->outstanding;
  in.session->in_flight[call->id] = Session::InFlight{call, in.stream};
  if (in.deferred) {
    *in.deferred = std::move(call);
    return;
  }
  // The completion handler owns the call, so the chain can work on a reference to it.
  asio::co_spawn(gateway_.io(), gateway_.pipeline().run(*call),
                 [weak_session = std::weak_ptr<Session>(in.session), stream = in.stream, call](
                     std::exception_ptr failure, call::Result result) {
                   settle(weak_session, *stream, *call, failure, std::move(result));
                 });
}

void Methods::settle(const std::weak_ptr<Session>& session, PostStream& stream,
                     const call::Call& call, const std::exception_ptr& failure,
                     call::Result result) {
  if (auto s = session.lock()) {
    auto it = s->in_flight.find(call.id);
    if (it != s->in_flight.end() && it->second.call.lock().get() == &call) s->in_flight.erase(it);
  }
  // A cancelled call was settled when it was cancelled: nothing is owed.
  if (call.cancelled()) return;
  if (failure) {
    result =
        call::Result::failure(call::Fault::kUnavailable, "internal error while running the call");
    spdlog::error("{} {}: the pipeline failed", call.method, call.id);
  }
  stream.on_response(to_jsonrpc(call, std::move(result)));
}

}  // namespace toolbridge::gateway
