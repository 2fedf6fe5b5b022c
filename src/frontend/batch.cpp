#include "frontend/batch.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <memory>
#include <optional>

#include "call/trace_context.h"
#include "call/trajectory_name.h"
#include "frontend/batch_codec.h"
#include "frontend/client_identity.h"
#include "frontend/router.h"
#include "frontend/trajectory_key.h"
#include "json/envelope.h"
#include "policy/admission_stage.h"
#include "policy/authorize.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace bj = boost::json;
namespace http = boost::beast::http;
using gateway::Call;
using gateway::Fault;
using gateway::Result;
using transport::Exchange;

namespace {

// A timeout_ms past this is refused rather than overflowing a deadline (the config caps
// durations at 30 days too).
constexpr double kMaxTimeoutMs = 30.0 * 24 * 3600 * 1000;

bool valid_tenant(std::string_view t) {
  return !t.empty() && t.size() <= 128 && std::all_of(t.begin(), t.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == ':' || c == '-';
  });
}

// A timeout_ms value: a positive number of milliseconds; empty string if valid.
std::string read_timeout(const bj::value& v, std::chrono::milliseconds& out) {
  if (!v.is_number()) return "timeout_ms must be a number of milliseconds";
  const double ms = v.to_number<double>();
  if (!(ms > 0) || ms > kMaxTimeoutMs) {
    return "timeout_ms must be more than 0 and at most 2592000000 (30 days)";
  }
  out = std::chrono::milliseconds(std::max<long long>(1, static_cast<long long>(ms)));
  return {};
}

BatchCallSpec read_call(const bj::value& v, std::size_t index) {
  BatchCallSpec c;
  const std::string where = fmt::format("calls[{}]", index);
  if (!v.is_object()) {
    c.error = where + " must be an object {\"tool\": NAME, \"arguments\": {...}}";
    return c;
  }
  const auto& o = v.as_object();
  for (const auto& [key, value] : o) {
    if (key == "tool") {
      if (!value.is_string() || value.as_string().empty()) {
        c.error = where + ".tool must be a non-empty string (the tool's name, server__tool)";
        return c;
      }
      if (value.as_string().size() > kMaxBatchToolName) {
        c.error = fmt::format("{}.tool is longer than {} bytes", where, kMaxBatchToolName);
        return c;
      }
      c.tool = std::string(value.as_string());
    } else if (key == "arguments") {
      if (value.is_null()) continue;
      if (!value.is_object()) {
        c.error = where + ".arguments must be an object";
        return c;
      }
      c.arguments = bj::serialize(value);
    } else if (key == "timeout_ms") {
      if (std::string why = read_timeout(value, c.timeout); !why.empty()) {
        c.error = where + "." + why;
        return c;
      }
    } else {
      c.error = fmt::format("{}: unknown key '{}' (a call has tool, arguments, timeout_ms)", where,
                            std::string_view(key));
      return c;
    }
  }
  if (c.tool.empty()) c.error = where + ".tool is missing (the tool's name, server__tool)";
  return c;
}

BatchRefusal bad(std::string message) {
  return BatchRefusal{400, "invalid_request", std::move(message)};
}

}  // namespace

BatchRefusal read_batch_request(const bj::value& body, BatchRequest& out, std::size_t max_calls) {
  if (!body.is_object()) return bad("the body must be an object {\"calls\": [...]}");
  const bj::array* calls = nullptr;
  for (const auto& [key, value] : body.as_object()) {
    if (key == "calls") {
      if (!value.is_array()) return bad("calls must be an array of {\"tool\", \"arguments\"}");
      calls = &value.as_array();
    } else if (key == "trajectory") {
      if (!value.is_string()) return bad("trajectory must be a string");
      if (std::string why = gateway::trajectory_name_error(value.as_string()); !why.empty()) {
        return bad("trajectory: " + why);
      }
      out.trajectory = std::string(value.as_string());
    } else if (key == "tenant") {
      if (!value.is_string() || !valid_tenant(value.as_string())) {
        return bad("tenant must be 1-128 characters of [A-Za-z0-9._:-]");
      }
      out.tenant = std::string(value.as_string());
    } else if (key == "mode") {
      const bool known =
          value.is_string() && (value.as_string() == "all" || value.as_string() == "fail_fast");
      if (!known) return bad("mode must be \"all\" (the default) or \"fail_fast\"");
      out.fail_fast = value.as_string() == "fail_fast";
    } else if (key == "sequential") {
      if (!value.is_bool()) return bad("sequential must be true or false");
      out.sequential = value.as_bool();
    } else if (key == "timeout_ms") {
      if (std::string why = read_timeout(value, out.timeout); !why.empty()) return bad(why);
    } else {
      return bad(fmt::format(
          "unknown key '{}' (a batch has calls, trajectory, tenant, mode, sequential, timeout_ms)",
          std::string_view(key)));
    }
  }
  if (!calls) return bad("calls is missing: {\"calls\": [{\"tool\": NAME, \"arguments\": {...}}]}");
  if (calls->empty())
    return bad(fmt::format("calls is empty: a batch carries 1 to {} calls", max_calls));
  if (calls->size() > max_calls) {
    return BatchRefusal{
        413, "too_many_calls",
        fmt::format("a batch carries at most {} calls (gateway.batch_max_calls); this one has "
                    "{}: split it",
                    max_calls, calls->size())};
  }
  out.calls.reserve(calls->size());
  for (std::size_t i = 0; i < calls->size(); ++i) out.calls.push_back(read_call((*calls)[i], i));
  return {};
}

namespace {

// One batch in flight: its calls, their results, and who waits for them. Shared by the
// handler, each call's completion and the peer-closed callback.
class Run : public std::enable_shared_from_this<Run> {
 public:
  Run(asio::io_context& io, const gateway::Pipeline& pipeline, bool fail_fast, bool sequential,
      std::size_t max_result_bytes)
      : io_(io),
        pipeline_(pipeline),
        fail_fast_(fail_fast),
        sequential_(sequential),
        wake_(io),
        max_result_bytes_(max_result_bytes) {}

  std::vector<std::shared_ptr<Call>> calls;  // null for an entry that cannot run
  std::vector<std::optional<Result>> results;
  std::vector<Call::Clock::time_point> done_at;

  void start() {
    pending_ = calls.size();
    if (sequential_) return next();
    for (std::size_t i = 0; i < calls.size(); ++i) launch(i);
  }

  asio::awaitable<void> wait() {
    while (pending_ > 0) {
      wake_.expires_at(asio::steady_timer::time_point::max());
      boost::system::error_code ec;
      co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }

  // The client hung up: nothing more is owed to it, so its calls stop taking slots.
  void abandon(const std::string& reason) {
    abandoned_ = true;
    cancel_all(reason);
  }

 private:
  void launch(std::size_t i) {
    if (results[i]) return finish(i, std::move(*results[i]));  // an entry that cannot run
    if (abandoned_) return finish(i, Result::failure(Fault::kCancelled, "the client disconnected"));
    if (stopped_by) {
      return finish(i, Result::failure(Fault::kCancelled, skipped_why()));
    }
    const std::shared_ptr<Call> call = calls[i];
    asio::co_spawn(io_, pipeline_.run(*call),
                   [self = shared_from_this(), i](std::exception_ptr failure, Result result) {
                     if (failure) {
                       spdlog::error("batch call {} ({}): the pipeline failed", i,
                                     self->calls[i]->route.display_name);
                       result = Result::failure(Fault::kUnavailable,
                                                "internal error while running the call");
                     }
                     self->finish(i, std::move(result));
                   });
  }

  void next() {
    if (next_ < calls.size()) launch(next_++);
  }

  void finish(std::size_t i, Result result) {
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
    done_at[i] = Call::Clock::now();
    results[i] = std::move(result);
    if (failed && fail_fast_ && !stopped_by) {
      stopped_by = i;
      cancel_all(skipped_why());
    }
    --pending_;
    if (pending_ == 0) wake_.cancel();
    if (sequential_) next();
  }

  std::string skipped_why() const {
    return fmt::format("not completed: call {} failed and the batch is fail_fast", *stopped_by);
  }

  void cancel_all(const std::string& reason) {
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (!results[i] && calls[i]) calls[i]->cancel(reason);
    }
  }

  asio::io_context& io_;
  const gateway::Pipeline& pipeline_;
  const bool fail_fast_;
  const bool sequential_;
  asio::steady_timer wake_;
  std::size_t pending_ = 0;
  std::size_t next_ = 0;
  std::size_t held_bytes_ = 0;  // of the results kept for the answer
  std::size_t max_result_bytes_ = 0;
  bool abandoned_ = false;

 public:
  std::optional<std::size_t> stopped_by;  // the call whose failure stopped a fail_fast batch
};

double ms_between(Call::Clock::time_point from, Call::Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

Batch::Batch(gateway::Gateway& gateway) : gateway_(gateway) {
  auto& m = gateway_.metrics();
  m.describe("toolbridge_batches_total", "counter",
             "POST /v1/batch requests by result: accepted (run; each call is counted in "
             "toolbridge_calls_total), refused (4xx), shed (429: every call was shed).");
  accepted_ =
      &m.counter_cell("toolbridge_batches_total", telemetry::labels({{"result", "accepted"}}));
  refused_ =
      &m.counter_cell("toolbridge_batches_total", telemetry::labels({{"result", "refused"}}));
  shed_ = &m.counter_cell("toolbridge_batches_total", telemetry::labels({{"result", "shed"}}));
}

asio::awaitable<void> Batch::refuse(Exchange& ex, const BatchRefusal& refusal,
                                    const transport::Headers& headers) {
  ++*(refusal.status == 429 ? shed_ : refused_);
  const std::string body = bj::serialize(
      bj::object{{"error", bj::object{{"code", refusal.code}, {"message", refusal.message}}}});
  const auto status = static_cast<http::status>(refusal.status);
  co_await ex.reply(status, "application/json", body, headers);
}

asio::awaitable<void> Batch::tools(Exchange& ex) {
  co_await gateway_.until_settled();
  const auto& catalog = gateway_.catalog();
  const config::ApiKey* key = ex.principal;
  const std::string body = key && !key->allow.empty()
                               ? policy::allowed_tools_json(catalog.tools_json(), *key,
                                                            [&](std::string_view name) {
                                                              const auto* e = catalog.tool(name);
                                                              return e ? e->server : std::string();
                                                            })
                               : catalog.tools_json();
  const transport::Headers no_headers;
  co_await ex.reply(http::status::ok, "application/json", body, no_headers);
}

asio::awaitable<void> Batch::post(Exchange& ex) {
  const auto& req = ex.request();
  const config::Gateway& limits = gateway_.config().gateway;
  const auto arrived = Call::Clock::now();
  const transport::Headers no_headers;
  const Encoding encoding = encoding_of(header(req, "Content-Type"));
  if (encoding == Encoding::kUnsupported) {
    const BatchRefusal r{415, "unsupported_media_type", std::string(kSupportedMediaTypes)};
    co_await refuse(ex, r, no_headers);
    co_return;
  }
  BatchRequest request;
  {
    std::string problem;
    const bj::value body = decode_body(encoding, req.body(), problem);
    if (!problem.empty()) {
      const BatchRefusal r{400, "invalid_body", std::move(problem)};
      co_await refuse(ex, r, no_headers);
      co_return;
    }
    if (BatchRefusal r = read_batch_request(body, request, limits.batch_max_calls); !r.empty()) {
      co_await refuse(ex, r, no_headers);
      co_return;
    }
  }
  // The trajectory and tenant may come as headers (as for /mcp) or in the body; both may be
  // given only if they agree.
  std::string problem;
  std::string trajectory = named_trajectory(req, {}, problem);
  if (problem.empty() && !request.trajectory.empty()) {
    if (!trajectory.empty() && trajectory != request.trajectory) {
      problem = fmt::format("{} names trajectory '{}' but the body names '{}'; name one",
                            kTrajectoryHeader, trajectory, request.trajectory);
    }
    trajectory = request.trajectory;
  }
  const std::string header_tenant(header(req, kTenantHeader));
  std::string owner;
  if (problem.empty()) owner = owner_of(ex, problem);
  if (problem.empty() && !request.tenant.empty()) {
    if (!header_tenant.empty() && header_tenant != request.tenant) {
      problem = fmt::format("{} names tenant '{}' but the body names '{}'; name one", kTenantHeader,
                            header_tenant, request.tenant);
    }
    owner = "tenant " + request.tenant;
  }
  // An API key's tenant overrides what the header or the body says.
  if (ex.principal) owner = "tenant " + ex.principal->tenant;
  if (!problem.empty()) {
    const BatchRefusal r = bad(problem);
    co_await refuse(ex, r, no_headers);
    co_return;
  }
  if (gateway_.stopping()) {
    const BatchRefusal r{503, "shutting_down", "the gateway is shutting down"};
    co_await refuse(ex, r, no_headers);
    co_return;
  }
  if (!trajectory.empty()) {
    if (std::string refused = gateway_.claim_trajectory(trajectory, owner); !refused.empty()) {
      const BatchRefusal r{403, "trajectory_refused", std::move(refused)};
      co_await refuse(ex, r, no_headers);
      co_return;
    }
  }
  // Without a trajectory, the batch's calls share a key of their own ('/' is never in a
  // trajectory name), released when the batch ends: per_session servers keep no state across
  // batches unless a trajectory is named.
  const bool ephemeral = trajectory.empty();
  const std::string key = ephemeral ? fmt::format("batch/{}", ++next_ephemeral_) : trajectory;
  const std::string tenant = ex.principal              ? ex.principal->tenant
                             : !request.tenant.empty() ? request.tenant
                             : !header_tenant.empty()  ? header_tenant
                                                       : owner;
  co_await gateway_.until_settled();

  // The caller's trace context (W3C traceparent header) goes to every call's trace line and to
  // its server in _meta; a malformed one is ignored.
  std::string traceparent(header(ex.request(), gateway::kTraceparent));
  if (!gateway::valid_traceparent(traceparent)) traceparent.clear();

  const std::size_t n = request.calls.size();
  auto run = std::make_shared<Run>(gateway_.io(), gateway_.pipeline(), request.fail_fast,
                                   request.sequential, limits.batch_max_result_bytes);
  run->calls.resize(n);
  run->results.resize(n);
  run->done_at.resize(n, arrived);
  for (std::size_t i = 0; i < n; ++i) {
    BatchCallSpec& spec = request.calls[i];
    if (!spec.error.empty()) {
      run->results[i] = Result::failure(Fault::kInvalidParams, std::move(spec.error));
      continue;
    }
    auto call = std::make_shared<Call>();
    call->method = "tools/call";
    call->id = std::to_string(i);
    call->params =
        R"({"name":)" + json::quote(spec.tool) + R"(,"arguments":)" + spec.arguments + "}";
    call->members = json::object_members(call->params).value_or(std::vector<json::Member>{});
    call->trajectory = key;
    call->request_scoped_key = ephemeral;
    call->tenant = tenant;
    call->principal = ex.principal;
    call->requested_timeout = spec.timeout.count() > 0 ? spec.timeout : request.timeout;
    call->started = arrived;
    if (!traceparent.empty()) {
      call->traceparent = traceparent;
      call->meta = R"({"traceparent":)" + json::quote(traceparent) + "}";
    }
    run->calls[i] = std::move(call);
  }
  ex.on_peer_closed([weak = std::weak_ptr<Run>(run)] {
    if (auto r = weak.lock()) r->abandon("the client disconnected");
  });
  ++*accepted_;
  run->start();
  co_await run->wait();
  if (ephemeral) gateway_.release_session(key);

  // Every call shed by admission control: the batch as a whole is refused, with when to retry.
  const bool all_shed = std::all_of(run->results.begin(), run->results.end(),
                                    [](const auto& r) { return r && r->fault == Fault::kShed; });
  if (all_shed) {
    std::size_t retry_after = 1;
    const auto& admission = gateway_.pipeline().admission().admission();
    for (const auto& call : run->calls) {
      retry_after = std::max(retry_after, admission.retry_after_seconds(call->route.server));
    }
    --*accepted_;  // counted as shed instead
    const transport::Headers headers{{"Retry-After", std::to_string(retry_after)}};
    const BatchRefusal r{429, "overloaded", run->results.front()->why};
    co_await refuse(ex, r, headers);
    co_return;
  }
  // Every call outside the API key's allowlist: the request as a whole is forbidden.
  const bool all_forbidden =
      std::all_of(run->results.begin(), run->results.end(),
                  [](const auto& r) { return r && r->fault == Fault::kForbidden; });
  if (all_forbidden) {
    --*accepted_;  // counted as refused instead
    const BatchRefusal r{403, "forbidden", run->results.front()->why};
    co_await refuse(ex, r, no_headers);
    co_return;
  }

  std::vector<BatchEntry> entries(n);
  for (std::size_t i = 0; i < n; ++i) {
    BatchEntry& e = entries[i];
    e.tool = request.calls[i].tool;
    e.result = std::move(*run->results[i]);
    const Call* call = run->calls[i].get();
    if (call) {
      const bool was_sent = call->sent != Call::Clock::time_point{};
      const auto sent = was_sent ? call->sent : run->done_at[i];
      e.queue_ms = ms_between(arrived, sent);
      e.execution_ms = ms_between(sent, run->done_at[i]);
      e.total_ms = ms_between(arrived, run->done_at[i]);
    }
  }
  const double total_ms = ms_between(arrived, Call::Clock::now());
  std::string body = encode_response(encoding, entries, total_ms);
  const std::string_view type = content_type(encoding);
  co_await ex.reply(http::status::ok, type, std::move(body), no_headers);
}

}  // namespace toolbridge::frontend
