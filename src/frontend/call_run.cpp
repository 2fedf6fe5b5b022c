#include "frontend/call_run.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "call/trace_context.h"
#include "frontend/client_identity.h"
#include "frontend/router.h"
#include "frontend/surface_key.h"
#include "frontend/trajectory_key.h"
#include "json/envelope.h"
#include "surfaces/surface_stage.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
using call::Call;
using call::Fault;
using call::Result;
using transport::Exchange;

namespace {
// The surface named by X-Toolbridge-Surface and the body (they must agree); empty if none.
base::Expected<std::string> scope_surface(const transport::Request& req,
                                          const gateway::Gateway& gateway,
                                          const std::string& body_surface) {
  base::Expected<std::string> surface = named_surface(req, {}, gateway.surfaces());
  if (!surface || body_surface.empty()) return surface;
  if (!surface->empty() && *surface != body_surface) {
    return base::fail(fmt::format("{} names surface '{}' but the body names '{}'; name one",
                                  kSurfaceHeader, *surface, body_surface));
  }
  if (!gateway.surfaces().has(body_surface))
    return base::fail("surface: " + gateway.surfaces().unknown_message(body_surface));
  return body_surface;
}
}  // namespace

BatchRefusal surface_scope(Exchange& ex, const gateway::Gateway& gateway,
                           const std::string& body_surface, CallScope& out) {
  const base::Expected<std::string> surface = scope_surface(ex.request(), gateway, body_surface);
  if (!surface) return BatchRefusal{400, "invalid_request", surface.error()};
  if (ex.principal) {
    if (base::Status allowed = check_key_surface(*ex.principal, *surface); !allowed)
      return BatchRefusal{403, "surface_refused", allowed.error()};
  }
  if (!surface->empty()) out.surface = gateway.surfaces().view(*surface);
  return {};
}

BatchRefusal call_scope(Exchange& ex, gateway::Gateway& gateway, const std::string& body_trajectory,
                        const std::string& body_tenant, std::string_view prefix,
                        std::uint64_t& next_ephemeral, CallScope& out,
                        const std::string& body_surface) {
  const auto& req = ex.request();
  // The trajectory and tenant may come as headers (as for /mcp) or in the body; both may be
  // given only if they agree.
  std::string problem;
  std::string trajectory;
  if (base::Expected<std::string> named = named_trajectory(req, {}))
    trajectory = std::move(*named);
  else
    problem = named.error();
  if (problem.empty() && !body_trajectory.empty()) {
    if (!trajectory.empty() && trajectory != body_trajectory) {
      problem = fmt::format("{} names trajectory '{}' but the body names '{}'; name one",
                            kTrajectoryHeader, trajectory, body_trajectory);
    }
    trajectory = body_trajectory;
  }
  const std::string header_tenant(header(req, kTenantHeader));
  std::string owner;
  if (problem.empty()) {
    if (base::Expected<std::string> from = owner_of(ex))
      owner = std::move(*from);
    else
      problem = from.error();
  }
  if (problem.empty() && !body_tenant.empty()) {
    if (!header_tenant.empty() && header_tenant != body_tenant) {
      problem = fmt::format("{} names tenant '{}' but the body names '{}'; name one", kTenantHeader,
                            header_tenant, body_tenant);
    }
    owner = "tenant " + body_tenant;
  }
  // An API key's tenant overrides what the header or the body says.
  if (ex.principal) owner = "tenant " + ex.principal->tenant;
  if (!problem.empty()) return BatchRefusal{400, "invalid_request", std::move(problem)};
  if (BatchRefusal r = surface_scope(ex, gateway, body_surface, out); !r.empty()) return r;
  if (gateway.stopping()) return BatchRefusal{503, "shutting_down", "the gateway is shutting down"};
  if (!trajectory.empty()) {
    if (base::Status claimed = gateway.claim_trajectory(trajectory, owner); !claimed)
      return BatchRefusal{403, "trajectory_refused", claimed.error()};
  }
  // Without a trajectory, the request's calls share a key of their own ('/' is never in a
  // trajectory name), released when it ends: per_session servers keep no state across requests
  // unless a trajectory is named.
  out.ephemeral = trajectory.empty();
  out.key = out.ephemeral ? fmt::format("{}/{}", prefix, ++next_ephemeral) : trajectory;
  out.tenant = ex.principal              ? ex.principal->tenant
               : !body_tenant.empty()   ? body_tenant
               : !header_tenant.empty() ? header_tenant
                                        : owner;
  out.principal = ex.principal;
  // The caller's trace context (W3C traceparent header) goes to every call's trace line and to
  // its server in _meta; a malformed one is ignored.
  out.traceparent = std::string(header(req, call::kTraceparent));
  if (!call::valid_traceparent(out.traceparent)) out.traceparent.clear();
  return {};
}

namespace {

// What a call owes to the request it came with.
void set_scope(Call& call, const CallScope& scope, std::chrono::milliseconds timeout) {
  call.method = "tools/call";
  call.trajectory = scope.key;
  call.request_scoped_key = scope.ephemeral;
  call.tenant = scope.tenant;
  call.principal = scope.principal;
  call.requested_timeout = timeout;
  call.started = scope.arrived;
  if (scope.surface) surfaces::set_surface(call, scope.surface);
  if (!scope.traceparent.empty()) {
    call.traceparent = scope.traceparent;
    call.meta = R"({"traceparent":)" + json::quote(scope.traceparent) + "}";
  }
}

}  // namespace

std::shared_ptr<Call> make_tool_call(std::size_t index, std::string_view tool,
                                     std::string_view arguments, const CallScope& scope,
                                     std::chrono::milliseconds timeout) {
  auto call = std::make_shared<Call>();
  call->id = std::to_string(index);
  call->params =
      R"({"name":)" + json::quote(tool) + R"(,"arguments":)" + std::string(arguments) + "}";
  call->members = json::object_members(call->params).value_or(std::vector<json::Member>{});
  set_scope(*call, scope, timeout);
  return call;
}

std::shared_ptr<Call> make_tool_call(std::size_t index, std::string_view tool,
                                     CheckedArguments arguments, const CallScope& scope,
                                     std::chrono::milliseconds timeout) {
  auto call = std::make_shared<Call>();
  set_tool_call(*call, index, tool, arguments, scope, timeout);
  return call;
}

void set_tool_call(Call& call, std::size_t index, std::string_view tool, CheckedArguments arguments,
                   const CallScope& scope, std::chrono::milliseconds timeout) {
  call.id = std::to_string(index);
  std::string& params = call.params;
  params.reserve(24 + tool.size() + arguments.text.size());
  params += R"({"name":)";
  const std::size_t name_at = params.size();
  append_quoted(params, tool);
  const std::size_t name_length = params.size() - name_at;
  params += R"(,"arguments":)";
  const std::size_t arguments_at = params.size();
  params += arguments.text;
  params += '}';
  // What json::object_members(params) would find: the two members just written.
  call.members.reserve(2);
  call.members.push_back(json::Member{"name", json::Span{name_at, name_length}});
  call.members.push_back(
      json::Member{"arguments", json::Span{arguments_at, arguments.text.size()}});
  set_scope(call, scope, timeout);
}

CallRun::CallRun(asio::io_context& io, const gateway::Pipeline& pipeline, bool fail_fast,
                 bool sequential, std::size_t max_result_bytes)
    : io_(io),
      pipeline_(pipeline),
      fail_fast_(fail_fast),
      sequential_(sequential),
      done_(pipeline.clock()),
      max_result_bytes_(max_result_bytes) {}

void CallRun::start() {
  pending_ = calls.size();
  done_at.resize(calls.size(), pipeline_.clock().now());
  results.resize(calls.size());
  if (sequential_) return next();
  starting_ = true;
  answered_.reserve(calls.size());
  while (next_ < calls.size()) {
    const std::size_t i = next_++;
    if (finished_without_running(i)) continue;
    asio::co_spawn(io_, run_from(shared_from_this(), i), [](std::exception_ptr failure) {
      if (failure) std::rethrow_exception(failure);
    });
  }
  starting_ = false;
  for (auto& [i, result] : std::exchange(answered_, {})) finish(i, std::move(result));
}

asio::awaitable<void> CallRun::run_from(std::shared_ptr<CallRun> self, std::size_t i) {
  for (;;) {
    std::optional<Result> result;
    try {
      result = co_await self->pipeline_.run(*self->calls[i]);
    } catch (...) {
      spdlog::error("call {} ({}): the pipeline failed", i, self->calls[i]->route.display_name);
      result = Result::failure(Fault::kUnavailable, "internal error while running the call");
    }
    if (!self->starting_) {  // it waited: the run has started every call
      self->finish(i, std::move(*result));
      co_return;
    }
    self->answered_.emplace_back(i, std::move(*result));
    do {
      if (self->next_ == self->calls.size()) co_return;
      i = self->next_++;
    } while (self->finished_without_running(i));
  }
}

std::size_t CallRun::add(std::shared_ptr<Call> call, std::optional<Result> preset) {
  const std::size_t i = calls.size();
  calls.push_back(std::move(call));
  results.push_back(std::move(preset));
  done_at.push_back(pipeline_.clock().now());
  ++pending_;
  launch(i);
  return i;
}

asio::awaitable<void> CallRun::wait() {
  while (pending_ > 0) co_await done_.wait();
}

void CallRun::abandon(const std::string& reason) {
  abandoned_ = true;
  cancel_all(reason);
}

bool CallRun::finished_without_running(std::size_t i) {
  if (results[i]) {
    finish(i, std::move(*results[i]));  // an entry that cannot run
  } else if (abandoned_) {
    finish(i, Result::failure(Fault::kCancelled, "the client disconnected"));
  } else if (stopped_by) {
    finish(i, Result::failure(Fault::kCancelled, skipped_why()));
  } else {
    return false;
  }
  return true;
}

void CallRun::launch(std::size_t i) {
  if (finished_without_running(i)) return;
  Call& call = *calls[i];  // kept alive by `calls` until this run ends
  asio::co_spawn(
      io_, pipeline_.run(call),
      [self = shared_from_this(), i](std::exception_ptr failure, Result result) {
        if (failure) {
          spdlog::error("call {} ({}): the pipeline failed", i, self->calls[i]->route.display_name);
          result = Result::failure(Fault::kUnavailable, "internal error while running the call");
        }
        self->finish(i, std::move(result));
      });
}

void CallRun::next() {
  if (next_ < calls.size()) launch(next_++);
}

void CallRun::finish(std::size_t i, Result result) {
  if (held_bytes_ + result.response.size() > max_result_bytes_) {
    result = Result::failure(
        Fault::kOverloaded,
        fmt::format("the result ({} bytes) was dropped: with it the batch's answer would pass "
                    "{} bytes (gateway.batch_max_result_bytes); ask for large results in "
                    "batches of their own",
                    result.response.size(), max_result_bytes_));
  }
  held_bytes_ += result.response.size();
  const bool failed = result.fault != Fault::kNone;
  done_at[i] = pipeline_.clock().now();
  results[i] = std::move(result);
  if (on_result) on_result(i, *results[i]);
  if (failed && fail_fast_ && !stopped_by) {
    stopped_by = i;
    cancel_all(skipped_why());
  }
  --pending_;
  if (pending_ == 0) done_.notify_all();
  if (sequential_) next();
}

std::string CallRun::skipped_why() const {
  return fmt::format("not completed: call {} failed and the batch is fail_fast", *stopped_by);
}

void CallRun::cancel_all(const std::string& reason) {
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (!results[i] && calls[i]) calls[i]->cancel(reason);
  }
}

bool CallRun::all_shed() const {
  return !results.empty() && std::all_of(results.begin(), results.end(), [](const auto& r) {
    return r && r->fault == Fault::kShed;
  });
}

namespace {
double ms_between(Call::Clock::time_point from, Call::Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}
}  // namespace

BatchEntry CallRun::entry(std::size_t i, std::string tool, Call::Clock::time_point arrived) {
  BatchEntry e;
  e.tool = std::move(tool);
  e.result = std::move(*results[i]);
  if (const Call* call = calls[i].get()) {
    const bool was_sent = call->sent != Call::Clock::time_point{};
    const auto sent = was_sent ? call->sent : done_at[i];
    e.queue_ms = ms_between(arrived, sent);
    e.execution_ms = ms_between(sent, done_at[i]);
    e.total_ms = ms_between(arrived, done_at[i]);
  }
  return e;
}

}  // namespace toolbridge::frontend
