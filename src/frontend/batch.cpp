#include "frontend/batch.h"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <memory>
#include <utility>

#include "call/trace_context.h"
#include "frontend/batch_codec.h"
#include "frontend/call_run.h"
#include "frontend/client_identity.h"
#include "frontend/router.h"
#include "frontend/surface_key.h"
#include "frontend/trajectory_key.h"
#include "gateway/request_span.h"
#include "idempotency/key_meta.h"
#include "json/envelope.h"
#include "policy/admission_stage.h"
#include "policy/authorize.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace bj = boost::json;
namespace http = boost::beast::http;
using call::Call;
using call::Fault;
using call::Result;
using transport::Exchange;

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
  const transport::Headers none;
  const base::Expected<std::string> surface = named_surface(ex.request(), {}, gateway_.surfaces());
  if (!surface) {
    const BatchRefusal refusal{400, "invalid_request", surface.error()};
    co_await refuse(ex, refusal, none);
    co_return;
  }
  if (auto view = gateway_.surfaces().view(*surface)) {
    // X-Toolbridge-Surface: the surface's list, as tools/list on /s/NAME/mcp.
    const std::string listed = surfaces::allowed_tools_json(*view, ex.principal);
    co_await ex.reply(http::status::ok, "application/json", listed, none);
    co_return;
  }
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
  const auto arrived = gateway_.clock().now();
  const transport::Headers no_headers;
  const Encoding encoding = encoding_of(header(req, "Content-Type"));
  if (encoding == Encoding::kUnsupported) {
    const BatchRefusal r{415, "unsupported_media_type", std::string(kSupportedMediaTypes)};
    co_await refuse(ex, r, no_headers);
    co_return;
  }
  BatchRequest request;
  const bool plain = encoding == Encoding::kJson &&
                     read_plain_batch_request(req.body(), request, limits.batch_max_calls);
  if (!plain) {
    request = BatchRequest{};
    const base::Expected<bj::value> body = decode_body(encoding, req.body());
    if (!body) {
      const BatchRefusal r{400, "invalid_body", body.error()};
      co_await refuse(ex, r, no_headers);
      co_return;
    }
    if (BatchRefusal r = read_batch_request(*body, request, limits.batch_max_calls); !r.empty()) {
      co_await refuse(ex, r, no_headers);
      co_return;
    }
  }
  CallScope scope;
  scope.arrived = arrived;
  if (BatchRefusal r = call_scope(ex, gateway_, request.trajectory, request.tenant, "batch",
                                  next_ephemeral_, scope, request.surface);
      !r.empty()) {
    co_await refuse(ex, r, no_headers);
    co_return;
  }
  // With span export on, the batch is a span and the parent of its calls' spans.
  auto request_span =
      gateway::RequestSpan::begin(gateway_.otel(), gateway_.clock(), "POST /v1/batch",
                                  scope.traceparent, scope.ephemeral ? std::string() : scope.key);
  if (request_span) {
    request_span->span().add("http.request.method", "POST");
    request_span->span().add("url.path", "/v1/batch");
    scope.traceparent = request_span->child_traceparent();
  }
  co_await gateway_.until_settled();

  const std::size_t n = request.calls.size();
  auto run = std::make_shared<CallRun>(gateway_.io(), gateway_.pipeline(), request.fail_fast,
                                       request.sequential, limits.batch_max_result_bytes);
  run->calls.resize(n);
  run->results.resize(n);
  run->done_at.resize(n, arrived);
  // The calls live and die with this request: one allocation holds them all.
  const auto block = std::make_shared<Call[]>(n);
  for (std::size_t i = 0; i < n; ++i) {
    BatchCallSpec& spec = request.calls[i];
    if (!spec.error.empty()) {
      run->results[i] = Result::failure(Fault::kInvalidParams, std::move(spec.error));
      continue;
    }
    const auto timeout = spec.timeout.count() > 0 ? spec.timeout : request.timeout;
    // Either path leaves one JSON object: the body's own bytes, or a value serialised.
    const CheckedArguments arguments{spec.arguments};
    set_tool_call(block[i], i, spec.tool, arguments, scope, timeout);
    if (!spec.id.empty()) block[i].slots.get<idempotency::Key>().value = std::move(spec.id);
    run->calls[i] = std::shared_ptr<Call>(block, &block[i]);
  }
  if (request.tasks) {
    co_await start_tasks(ex, std::move(run), request, scope);
    co_return;
  }
  ex.on_peer_closed([weak = std::weak_ptr<CallRun>(run)] {
    if (auto r = weak.lock()) r->abandon("the client disconnected");
  });
  ++*accepted_;
  run->start();
  co_await run->wait();
  if (scope.ephemeral) gateway_.release_session(scope.key);
  if (request_span) request_span->end(n, run->all_shed());

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
  for (std::size_t i = 0; i < n; ++i) {
    entries.push_back(run->entry(i, std::move(request.calls[i].tool), arrived));
  }
  const double total_ms =
      std::chrono::duration<double, std::milli>(gateway_.clock().now() - arrived).count();
  std::string body = encode_response(encoding, entries, total_ms);
  const std::string_view type = content_type(encoding);
  co_await ex.reply(http::status::ok, type, std::move(body), no_headers);
}

}  // namespace toolbridge::frontend
