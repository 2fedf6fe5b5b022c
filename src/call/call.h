#pragma once
// The pipeline's vocabulary (namespace gateway): one call through the pipeline: what a front end
// parsed once (method, raw params, the caller's id, the trajectory), what the stages decided
// (route, deadline), and the Result that comes back. Front ends build Calls; stages read and refine
// them; nothing re-parses the request.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/in_flight.h"
#include "call/slots.h"
#include "json/envelope.h"
#include "upstream/instance.h"

namespace toolbridge::upstream {
class Upstream;
}

namespace toolbridge::call {

// How a call ended. Front ends turn a fault into their own answer (a JSON-RPC error, an isError
// tool result, a batch entry); metrics label outcomes with outcome_label().
enum class Fault {
  kNone,           // the server answered with a result
  kToolError,      // the server answered with a result that has isError: true
  kServerError,    // the server answered with a JSON-RPC error
  kInvalidParams,  // the gateway refused the request as malformed (unknown tool, bad _meta)
  kNotFound,       // no server serves the resource
  kUnavailable,    // no instance could take the call (not running, breaker open, checkout)
  kOverloaded,     // an instance refused it (max_in_flight)
  kShed,           // admission control refused it at once: the server's queue is full
  kTimeout,        // the deadline passed
  kCrashed,        // the instance died with the call sent
  kNotSent,        // the instance died before the call reached it
  kCancelled,      // the caller cancelled it: nothing is answered
  kForbidden,      // the caller's API key may not call this server or tool
  kShuttingDown,   // the gateway is stopping
  // The gateway answered with an isError result without running the tool: the call as written
  // cannot run (arguments that fail the schema under validate: enforce, a tool name repair could
  // not settle). Counted as tool_error, as before; its class is agent.
  kInvalidCall,
};
inline constexpr std::size_t kFaultCount = static_cast<std::size_t>(Fault::kInvalidCall) + 1;

// Whose fault a call's failure was, for trainers that mask trajectories the infrastructure
// failed (docs/faults.md): ok; agent (the call as written cannot run); tool (the tool ran and
// said no); infra (the gateway or the server's process failed the call).
enum class FaultClass { kOk, kAgent, kTool, kInfra };
inline constexpr std::size_t kFaultClassCount = 4;
// The one table from every fault to its class.
FaultClass fault_class(Fault f);
// "ok", "agent", "tool", "infra".
std::string_view to_string(FaultClass c);

std::string_view to_string(Fault f);
// The label of toolbridge_calls_total{outcome}: ok, tool_error, error, timeout, crashed,
// unavailable, cancelled, shed.
std::string_view outcome_label(Fault f);
// The JSON-RPC error code a fault is reported with when it is not the server's own error.
int error_code(Fault f);

struct Result {
  Fault fault = Fault::kNone;
  // The server's JSON-RPC response, already carrying the caller's id (empty for the gateway's
  // own faults).
  std::string response;
  // Why, in words an agent can act on (gateway faults; for kServerError, the server's message).
  std::string why;
  // Where the result's value sits in `response`, when whoever wrote it knew (a cache hit): a
  // front end need not scan for it. Empty if unknown. A stage that rewrites `response` leaves it
  // stale, so readers check that it still frames the result (frontend/batch_codec.cpp).
  json::Span result_at;

  static Result failure(Fault f, std::string why) { return Result{f, {}, std::move(why)}; }
  bool answered_by_server() const { return !response.empty(); }
};

// The result value `r.result_at` frames, if it still does (the response's last member,
// `"result":` before it), else empty: a stage that rewrote the response after it was set
// (repair reporting its changes, an id of another length spliced in) moved what it framed, and
// then the caller scans the response.
std::string_view known_result(const Result& r);

// Where a call goes, decided by the resolve stage.
struct Route {
  std::shared_ptr<upstream::Upstream> upstream;
  std::string server;        // its configured name
  std::string tool;          // the server's own tool name (tools/call), else empty
  std::string label;         // metrics label: the exposed tool name, or the method
  std::string display_name;  // in messages: "server__tool", or "server method"
};

// One change repair made to the call (src/repair/): reported in the result's
// _meta["toolbridge/repairs"] and counted by kind.
struct CallRepair {
  std::string kind;  // one of a fixed set: "tool_name", "param_name", "type_coerced", ...
  std::string path;  // JSON pointer into the arguments; empty for the tool name
  std::string from;
  std::string to;
};

// Receives what a server sends on the call's behalf while it runs (progress, log messages,
// sampling or elicitation requests). The front end's stream, if it has one.
using Events = upstream::CallSink;

// An attempt in flight that a cancel must stop (the server is told; the attempt ends).
class Abandonable {
 public:
  virtual ~Abandonable() = default;
  virtual void abandon(const std::string& reason) = 0;
};

// The budget of a call to `server`'s tool `tool` (the server's own name; empty for non-tool
// methods) when the caller asked for `requested` (0: nothing asked): the server's call_timeout
// or the tool's own timeout, shortened — never lengthened — by the caller's request.
std::chrono::milliseconds call_budget(const config::Server& server, const std::string& tool,
                                      std::chrono::milliseconds requested);

class Call {
 public:
  using Clock = base::Clock;

  // As the front end parsed it.
  std::string method;                 // "tools/call", "prompts/get", "resources/read", ...
  std::string id;                     // the caller's raw JSON-RPC id
  std::string params;                 // raw JSON object ("{}" when the request had none)
  std::vector<json::Member> members;  // top-level members of `params` (one scan, no DOM)
  // The new raw value of params._meta with the gateway's own keys taken out; empty to drop
  // _meta; unset to leave it as it was.
  std::optional<std::string> meta;
  std::string progress_token;  // raw JSON of _meta.progressToken, empty if none
  std::string trajectory;      // per_session key: _meta["toolbridge/session"] or the session
  // `trajectory` is a key the front end made for one request (a batch or parse request naming no
  // trajectory), not a trajectory: the call log and the trace list the call under none.
  bool request_scoped_key = false;
  // The run the call belongs to, for admission control: _meta["toolbridge/tenant"], else the
  // session's X-Toolbridge-Tenant, else the session id.
  std::string tenant;
  // The API key the request came with (null: authentication off). Its tenant overrides the
  // caller's; its allowlist is checked by the authorize stage.
  const config::ApiKey* principal = nullptr;
  std::chrono::milliseconds requested_timeout{0};  // _meta["toolbridge/timeout_ms"], 0 if none
  // W3C trace context of the caller's own tracing (`traceparent` header or _meta), validated;
  // empty if none. Written to the call trace and sent on in the upstream call's _meta.
  std::string traceparent;
  std::shared_ptr<Events> events;  // may be null (no stream to send events to)
  // When the call arrived, on the gateway's clock (the front end sets it): deadlines, queue
  // times and the call log count from here.
  Clock::time_point started{};

  // What a stage keeps of its own for this call (call/slots.h): the caller's word on the cache,
  // on repair, its idempotency key (each read from its _meta key by the stage's MetaKey).
  Slots slots;

  // Decided by the stages.
  Route route;  // set with set_route()
  // The name the server knows a tool or prompt by (resolve sets it; empty: params' name stays).
  std::string server_name;
  // What the server is sent (names as the server knows them, _meta as the front end left it):
  // built by server_params() when a stage first needs it, so a call answered before dispatch (a
  // cache hit) never builds it. Empty until then.
  std::string upstream_params;
  // Set once, with the route: `started` + call_budget(). Every stage spends what is left of it.
  Clock::time_point deadline = Clock::time_point::max();
  std::chrono::milliseconds timeout{0};  // the budget the deadline was set from
  int attempts = 0;                      // retries so far
  int sends = 0;                         // times it was handed to an instance
  std::vector<CallRepair> repairs;       // what repair changed (tool name, arguments)
  // Repair rewrote the arguments in upstream_params. Until it does, they are member("arguments")
  // of params byte for byte (resolve changes only the name and _meta).
  bool arguments_rewritten = false;
  bool cached = false;  // answered from the result cache
  // When the call was first handed to an instance (time_point{} if it never was: refused, shed,
  // expired in a queue, answered without a server): the time before is queueing (admission,
  // waiting for an instance), the time after is execution.
  Clock::time_point sent{};
  int instance_pid = 0;  // the instance that answered it last (0: none, or a remote server)
  // The instance it was last handed to (the dispatch stage sets it): a task-augmented call's
  // server task lives there.
  std::weak_ptr<upstream::Instance> instance;
  // A tools/call that carries `task` to its server (2025-11-25), which makes a task of it there:
  // never retried (a retry would make a second task), cached or replayed by an idempotency key
  // (the answer names a task of one instance). docs/tasks.md.
  bool task_augmented = false;

  bool is_tool_call() const { return method == "tools/call"; }
  // Routes the call (the resolve stage) and gives it its budget and deadline from `started` and
  // requested_timeout, once. A route without an upstream (a stage tested alone) sets neither.
  // The call holds its upstream (Upstream::holders) until answered() or its end.
  void set_route(Route r);
  // The call has its answer: it no longer holds its upstream (a drain stops waiting for it).
  void answered() { holder_.release(); }
  // upstream_params, built from params, server_name and meta if it is not yet.
  const std::string& server_params();
  // The raw value of a top-level member of params; empty if absent.
  std::string_view member(std::string_view name) const;
  // A string member, unescaped; empty if absent or not a string.
  std::string string_member(std::string_view name) const;

  // Cancellation (notifications/cancelled, the session ending): the instance is told and the
  // call's awaiting stage resumes with kCancelled. Idempotent.
  void cancel(const std::string& reason);
  bool cancelled() const { return cancelled_; }
  // The dispatch stage registers the attempt in flight, to be abandoned on cancel.
  void set_in_flight(std::weak_ptr<Abandonable> attempt) { in_flight_ = std::move(attempt); }

 private:
  bool cancelled_ = false;
  std::weak_ptr<Abandonable> in_flight_;
  base::InFlight::Token holder_;  // after `route`: released before its upstream can go
};

}  // namespace toolbridge::call
