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
#include "frontend/call_run.h"
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
  CallScope scope;
  scope.arrived = arrived;
  if (BatchRefusal r = call_scope(ex, gateway_, request.trajectory, request.tenant, "batch",
                                  next_ephemeral_, scope);
      !r.empty()) {
    co_await refuse(ex, r, no_headers);
    co_return;
  }
  co_await gateway_.until_settled();

  const std::size_t n = request.calls.size();
  auto run = std::make_shared<CallRun>(gateway_.io(), gateway_.pipeline(), request.fail_fast,
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
    const auto timeout = spec.timeout.count() > 0 ? spec.timeout : request.timeout;
    run->calls[i] = make_tool_call(i, spec.tool, spec.arguments, scope, timeout);
  }
  ex.on_peer_closed([weak = std::weak_ptr<CallRun>(run)] {
    if (auto r = weak.lock()) r->abandon("the client disconnected");
  });
  ++*accepted_;
  run->start();
  co_await run->wait();
  if (scope.ephemeral) gateway_.release_session(scope.key);

  // Every call shed by admission control: the batch as a whole is refused, with when to retry.
  if (run->all_shed()) {
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

  std::vector<BatchEntry> entries;
  entries.reserve(n);
  for (std::size_t i = 0; i < n; ++i) entries.push_back(run->entry(i, request.calls[i].tool, arrived));
  const double total_ms =
      std::chrono::duration<double, std::milli>(Call::Clock::now() - arrived).count();
  std::string body = encode_response(encoding, entries, total_ms);
  const std::string_view type = content_type(encoding);
  co_await ex.reply(http::status::ok, type, std::move(body), no_headers);
}

}  // namespace toolbridge::frontend
