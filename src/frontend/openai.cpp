#include "frontend/openai.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include "base/spawn.h"
#include "call/stage.h"
#include "call/trace_context.h"
#include "call/trajectory_name.h"
#include "frontend/client_identity.h"
#include "frontend/openai_proxy.h"
#include "frontend/router.h"
#include "llm/usage.h"
#include "policy/admission_stage.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace bj = boost::json;
namespace http = boost::beast::http;
using call::Fault;
using call::Result;
using transport::Exchange;

namespace {

constexpr std::size_t kMaxTrajectoryId = 256;

asio::awaitable<void> reply_error(Exchange& ex, http::status status, std::string_view message,
                                  std::string_view type, std::string_view code,
                                  const transport::Headers& headers = {}) {
  std::string body = openai_error_json(message, type, code);
  co_await ex.reply(status, "application/json", std::move(body), headers);
}

void append_text(std::string& out, const bj::value& content) {
  if (const auto* s = content.if_string()) {
    out.append(s->data(), s->size());
  } else if (const auto* parts = content.if_array()) {
    for (const auto& p : *parts) {
      const auto* o = p.if_object();
      if (!o) continue;
      if (const auto* t = o->if_contains("text"); t && t->is_string()) {
        out.append(t->get_string().data(), t->get_string().size());
        out += ' ';
      }
    }
  }
}

// A trajectory id: printable ASCII, bounded; empty if unusable.
bool valid_trajectory(std::string_view t) {
  if (t.empty() || t.size() > kMaxTrajectoryId) return false;
  for (unsigned char c : t)
    if (c < 0x20 || c >= 0x7f) return false;
  return true;
}

}  // namespace

std::string prompt_key(const bj::object& body, bool chat) {
  std::string out;
  if (!chat) {
    if (const auto* p = body.if_contains("prompt")) append_text(out, *p);
    return out;
  }
  const auto* messages = body.if_contains("messages");
  if (!messages || !messages->is_array()) return out;
  for (const auto& m : messages->get_array()) {
    const auto* o = m.if_object();
    if (!o) continue;
    if (const auto* role = o->if_contains("role"); role && role->is_string()) {
      out.append(role->get_string().data(), role->get_string().size());
    }
    out += '\n';
    if (const auto* content = o->if_contains("content")) append_text(out, *content);
    out += '\n';
  }
  return out;
}

std::string messages_hash(const bj::object& body, bool chat) {
  const auto* v = body.if_contains(chat ? "messages" : "prompt");
  if (!v) return {};
  const std::string text = bj::serialize(*v);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr);
  std::string out = "sha256:";
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

namespace {

llm::TokenRecords::Limits token_limits(const config::Config& c) {
  llm::TokenRecords::Limits l;
  l.max_bytes = c.gateway.token_records_max_bytes;
  l.trajectory_max_bytes = c.gateway.token_records_trajectory_max_bytes;
  l.max_turns = c.gateway.token_records_max_turns;
  l.idle_ttl = c.gateway.session_idle_ttl;
  l.ttl = c.gateway.token_records_ttl;
  return l;
}

}  // namespace

OpenAi::OpenAi(gateway::Gateway& gateway)
    : gateway_(gateway), token_records_(token_limits(gateway.config())) {
  for (const auto& m : gateway_.config().models) {
    models_.push_back(std::make_shared<llm::Model>(gateway_.io().get_executor(), m,
                                                   gateway_.metrics(), gateway_.clock()));
  }
  register_metrics();
  register_token_metrics();
}

OpenAi::~OpenAi() = default;

void OpenAi::register_token_metrics() {
  auto& m = gateway_.metrics();
  m.gauge("toolbridge_token_records_bytes",
          "What the token records (models with record_tokens) hold, in all; bounded by "
          "gateway.token_records_max_bytes.",
          [this](auto& out) {
            out.emplace_back("", static_cast<double>(token_records_.bytes()));
          });
  m.gauge("toolbridge_token_records_trajectories", "Trajectories whose token records are kept.",
          [this](auto& out) {
            out.emplace_back("", static_cast<double>(token_records_.trajectory_count()));
          });
  m.counter_fn("toolbridge_token_records_kept_total", "Model calls whose token record was kept.",
               [this](auto& out) {
                 out.emplace_back("", static_cast<double>(token_records_.counters().kept));
               });
  m.counter_fn(
      "toolbridge_token_records_dropped_total",
      "Token records dropped, by reason: turns (token_records_max_turns), trajectory_bytes "
      "(token_records_trajectory_max_bytes), max_bytes (token_records_max_bytes), expired "
      "(token_records_ttl after release).",
      [this](auto& out) {
        const auto& c = token_records_.counters();
        for (const auto& [reason, n] :
             {std::pair{"turns", c.dropped_turns},
              std::pair{"trajectory_bytes", c.dropped_trajectory_bytes},
              std::pair{"max_bytes", c.dropped_max_bytes}, std::pair{"expired", c.dropped_expired}}) {
          out.emplace_back(telemetry::labels({{"reason", reason}}), static_cast<double>(n));
        }
      });
}

void OpenAi::register_metrics() {
  auto& m = gateway_.metrics();
  m.describe("toolbridge_llm_requests_total", "counter",
             "Model requests answered by a worker (outcome ok) or failed on it (error), by model "
             "and worker; a retried request counts once per attempt.");
  m.describe("toolbridge_llm_prompt_tokens_total", "counter",
             "Prompt tokens of answered requests as the worker reported them (usage).");
  m.describe("toolbridge_llm_cached_tokens_total", "counter",
             "Prompt tokens the worker reported served from its prefix cache "
             "(usage.prompt_tokens_details.cached_tokens); share = cached / prompt.");
  m.describe("toolbridge_llm_spills_total", "counter",
             "Requests sent to this worker because the one the policy preferred was overloaded.");
  m.describe("toolbridge_llm_retries_total", "counter",
             "Model requests sent again to another worker after a failure before the first byte.");
  m.describe("toolbridge_llm_ttft_seconds", "histogram",
             "Time from sending a request to a worker to the first byte of its answer's body.");
  m.describe("toolbridge_llm_latency_seconds", "histogram",
             "Time from sending a request to a worker to the end of its answer.");
  m.gauge("toolbridge_llm_in_flight", "Model requests in flight on a worker.",
          [this](std::vector<std::pair<std::string, double>>& out) {
            for (const auto& model : models_) {
              for (const auto& w : model->workers()) {
                out.emplace_back(
                    telemetry::labels({{"model", model->name()}, {"worker", w.config.name}}),
                    static_cast<double>(w.in_flight));
              }
            }
          });
  m.gauge("toolbridge_llm_worker_up",
          "1 while a worker is in rotation, 0 while its breaker keeps it out.",
          [this](std::vector<std::pair<std::string, double>>& out) {
            for (const auto& model : models_) {
              for (const auto& w : model->workers()) {
                out.emplace_back(
                    telemetry::labels({{"model", model->name()}, {"worker", w.config.name}}),
                    w.open ? 0.0 : 1.0);
              }
            }
          });
}

namespace {

// The coroutine holds the model: a reload may drop it from the list while the loop runs.
asio::awaitable<void> health_of(std::shared_ptr<llm::Model> model) {
  co_await model->health_loop();
}

asio::awaitable<void> retire_model(std::shared_ptr<llm::Model> model,
                                   base::Clock::time_point limit) {
  // Woken by the last request's answer (each holds a users() token), by the limit, or by stop().
  co_await model->users().until_zero(limit);
  if (model->users().count() > 0) {
    spdlog::warn("reload: model {} (old version) still has {} requests in flight; stopping it",
                 model->name(), model->users().count());
  } else {
    spdlog::info("reload: model {} (old version) drained; stopping it", model->name());
  }
  model->stop();
}

}  // namespace

void OpenAi::start_health(const std::shared_ptr<llm::Model>& model) {
  asio::co_spawn(gateway_.io(), health_of(model), base::log_failure("model health loop"));
}

void OpenAi::start() {
  started_ = true;
  for (const auto& m : models_) start_health(m);
}

void OpenAi::reconfigure(const std::vector<config::Model>& models) {
  std::vector<std::shared_ptr<llm::Model>> next;
  std::vector<std::shared_ptr<llm::Model>> old = std::move(models_);
  models_.clear();
  for (const auto& m : models) {
    auto it =
        std::find_if(old.begin(), old.end(), [&m](const auto& o) { return o->name() == m.name; });
    if (it != old.end() && (*it)->config() == m) {
      next.push_back(std::move(*it));  // unchanged: kept with all it learnt
      old.erase(it);
      continue;
    }
    auto fresh = std::make_shared<llm::Model>(gateway_.io().get_executor(), m, gateway_.metrics(),
                                              gateway_.clock());
    if (it != old.end()) fresh->adopt(**it);
    if (started_) start_health(fresh);
    next.push_back(std::move(fresh));
  }
  models_ = std::move(next);
  // What is left was removed or replaced: it finishes what it has, then stops.
  for (auto& m : old) retire(std::move(m));
}

void OpenAi::retire(std::shared_ptr<llm::Model> model) {
  std::erase_if(retiring_, [](const auto& w) { return w.expired(); });
  retiring_.push_back(model);
  const auto limit =
      gateway_.clock().now() + model->config().request_timeout + std::chrono::seconds(1);
  asio::co_spawn(gateway_.io(), retire_model(std::move(model), limit),
                 base::log_failure("retire a model"));
}

asio::awaitable<void> OpenAi::drain(std::chrono::milliseconds grace) {
  const auto until = gateway_.clock().now() + grace;
  std::vector<std::shared_ptr<llm::Model>> all = models_;
  for (const auto& w : retiring_) {
    if (auto m = w.lock()) all.push_back(std::move(m));
  }
  std::size_t in_flight = 0;
  for (const auto& m : all) {
    if (!co_await m->users().until_zero(until)) in_flight += m->users().count();
  }
  if (in_flight > 0)
    spdlog::warn("shutdown: {} model requests still in flight after shutdown_grace", in_flight);
}

void OpenAi::stop() {
  for (auto& m : models_) m->stop();
  for (const auto& w : retiring_) {
    if (auto m = w.lock()) {
      m->stop();
      m->users().wake_all();  // its retirement ends now
    }
  }
}

std::shared_ptr<llm::Model> OpenAi::find(std::string_view name) {
  for (auto& m : models_)
    if (m->name() == name) return m;
  return nullptr;
}

asio::awaitable<void> OpenAi::models(Exchange& ex) {
  bj::array data;
  for (const auto& m : models_) {
    data.push_back(bj::object{
        {"id", m->name()}, {"object", "model"}, {"created", 0}, {"owned_by", "toolbridge"}});
  }
  std::string body = bj::serialize(bj::object{{"object", "list"}, {"data", std::move(data)}});
  co_await ex.reply(http::status::ok, "application/json", std::move(body));
}

asio::awaitable<void> OpenAi::post(Exchange& ex, std::string_view path) {
  const bool chat = path == "/v1/chat/completions";
  if (gateway_.stopping()) {
    co_await reply_error(ex, http::status::service_unavailable, "the gateway is shutting down",
                         "unavailable", "");
    co_return;
  }
  boost::system::error_code ec;
  bj::value doc = bj::parse(ex.request().body(), ec);
  if (ec || !doc.is_object()) {
    std::string msg = ec ? fmt::format("the body is not valid JSON: {}", ec.message())
                         : std::string("the body must be a JSON object");
    co_await reply_error(ex, http::status::bad_request, msg, "invalid_request_error", "");
    co_return;
  }
  const bj::object& body = doc.get_object();
  const auto* model_v = body.if_contains("model");
  if (!model_v || !model_v->is_string()) {
    co_await reply_error(ex, http::status::bad_request,
                         "the body needs \"model\": the name of a configured model "
                         "(GET /v1/models lists them)",
                         "invalid_request_error", "");
    co_return;
  }
  std::shared_ptr<llm::Model> model = find(model_v->get_string());
  if (!model) {
    std::string names;
    for (const auto& m : models_) names += (names.empty() ? "" : ", ") + m->name();
    const std::string_view asked = model_v->get_string();
    std::string msg =
        fmt::format("the model '{}' does not exist here; this gateway serves: {}",
                    asked.substr(0, 256), names.empty() ? std::string("none") : names);
    co_await reply_error(ex, http::status::not_found, msg, "invalid_request_error",
                         "model_not_found");
    co_return;
  }
  if (const auto* s = body.if_contains("stream"); s && !s->is_bool() && !s->is_null()) {
    co_await reply_error(ex, http::status::bad_request, "\"stream\" must be true or false",
                         "invalid_request_error", "");
    co_return;
  }
  // The trajectory: the X-Toolbridge-Trajectory header, else metadata.trajectory_id (both
  // under the trajectory name rule), else `user` (any printable ASCII: often an account id).
  std::string trajectory_error;
  std::string trajectory;
  if (base::Expected<std::string> named = named_trajectory(ex.request(), ""))
    trajectory = std::move(*named);
  else
    trajectory_error = named.error();
  if (trajectory.empty() && trajectory_error.empty()) {
    if (const auto* md = body.if_contains("metadata"); md && md->is_object()) {
      if (const auto* t = md->get_object().if_contains("trajectory_id"); t && t->is_string()) {
        trajectory = std::string(t->get_string());
        if (base::Status named = call::check_trajectory_name(trajectory); !named)
          trajectory_error = "metadata.trajectory_id: " + named.error();
      }
    }
  }
  if (trajectory.empty() && trajectory_error.empty()) {
    if (const auto* u = body.if_contains("user"); u && u->is_string()) {
      trajectory = std::string(u->get_string());
      if (!valid_trajectory(trajectory))
        trajectory_error = fmt::format(
            "\"user\" names the trajectory when no X-Toolbridge-Trajectory header or "
            "metadata.trajectory_id does: 1 to {} printable ASCII characters",
            kMaxTrajectoryId);
    }
  }
  if (!trajectory_error.empty()) {
    co_await reply_error(ex, http::status::bad_request, trajectory_error, "invalid_request_error",
                         "");
    co_return;
  }
  base::Expected<std::string> owner = owner_of(ex);
  if (!owner) {
    const std::string owner_error = owner.error();
    co_await reply_error(ex, http::status::bad_request, owner_error, "invalid_request_error", "");
    co_return;
  }
  std::string tenant = std::move(*owner);
  const std::string prompt = prompt_key(body, chat);
  const llm::RouteInput input{trajectory, prompt};
  // Until the answer: a reload that replaces the model stops the old version after it.
  const base::InFlight::Token using_model(model->users());

  call::Call call;
  call.method = chat ? "chat/completions" : "completions";
  call.route.server = model->name();
  call.route.label = call.method;
  call.route.display_name = fmt::format("model '{}'", model->name());
  call.tenant = tenant;
  call.trajectory = trajectory;
  call.timeout = model->config().request_timeout;
  call.started = gateway_.clock().now();
  call.deadline = call.started + call.timeout;
  // The caller's trace context: the parent of the request's span, sent on to the worker.
  if (const auto tp = header(ex.request(), call::kTraceparent); call::valid_traceparent(tp))
    call.traceparent = std::string(tp);

  auto state = std::make_shared<InFlight>();
  ex.on_peer_closed([weak = std::weak_ptr<InFlight>(state), &call] {
    auto s = weak.lock();
    if (!s) return;
    s->client_gone = true;
    if (s->upstream) s->upstream->close();
    call.cancel("the client disconnected");
  });
  // measure (metrics, the call log, the trace) → admission → the proxy to a worker.
  auto& admission = gateway_.pipeline().admission_stage();
  std::vector<std::unique_ptr<call::Stage>> chain;
  chain.push_back(std::make_unique<call::BorrowedStage>(gateway_.pipeline().measure_stage()));
  chain.push_back(std::make_unique<call::BorrowedStage>(admission));
  auto proxy = std::make_unique<ProxyStage>(ex, *model, state, path, input,
                                            gateway_.io().get_executor(), gateway_.clock());
  ProxyStage& stage = *proxy;
  if (model->config().record_tokens && !trajectory.empty()) {
    stage.record.store = &token_records_;
    stage.record.trajectory = trajectory;
    stage.record.endpoint = call.method;
    stage.record.messages_hash = messages_hash(body, chat);
  }
  chain.push_back(std::move(proxy));
  Result result = co_await call::Next(chain, 0)(call);
  state->upstream.reset();
  if (state->replied || state->client_gone || result.fault == Fault::kCancelled) {
    // The weak callback may still run after this frame is gone: it must not touch `call`.
    state->client_gone = true;
    co_return;
  }
  state->client_gone = true;
  if (result.fault == Fault::kNone) co_return;
  if (result.fault == Fault::kShed) {
    const std::string after =
        std::to_string(admission.admission().retry_after_seconds(call.route.server));
    const transport::Headers h{{"Retry-After", after}};
    co_await reply_error(ex, http::status::too_many_requests, result.why, "overloaded",
                         "admission_shed", h);
    co_return;
  }
  if (result.fault == Fault::kTimeout && stage.status != http::status::gateway_timeout) {
    co_await reply_error(ex, http::status::gateway_timeout, result.why, "timeout", "");
    co_return;
  }
  if (!stage.error_body.empty()) {
    // Every attempt failed with a worker's own error answer: pass the last one on.
    transport::Headers h;
    if (stage.retry_hint.count() > 0)
      h.emplace_back(
          "Retry-After",
          std::to_string(std::chrono::ceil<std::chrono::seconds>(stage.retry_hint).count()));
    std::string b = std::move(stage.error_body);
    co_await ex.reply(stage.status, "application/json", std::move(b), h);
    co_return;
  }
  co_await reply_error(ex, stage.status, result.why, stage.error_type, "");
}

}  // namespace toolbridge::frontend
