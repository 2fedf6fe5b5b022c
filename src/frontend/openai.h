#pragma once
// The OpenAI-compatible front end (LLM routing): POST /v1/chat/completions and /v1/completions
// go to a worker of the model the body names, chosen by the model's routing policy (src/llm/);
// GET /v1/models lists the configured models. The routes exist with or without models, so a
// reload can add the first one (docs/reload.md); a request for a model that is not configured is
// 404 `model_not_found`. Requests pass the gateway's admission control
// (global, tenant, trajectory and per-model limits) and carry a deadline (request_timeout).
// Bodies are forwarded as received; answers stream back chunk by chunk as the worker sends
// them. Failures before the first byte reached the client are retried on another worker.
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/trajectory_key.h"
#include "gateway/gateway.h"
#include "llm/model.h"
#include "llm/token_records.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

inline constexpr const char* kWorkerHeader = "X-Toolbridge-Worker";

class OpenAi {
 public:
  explicit OpenAi(gateway::Gateway& gateway);
  ~OpenAi();

  bool enabled() const { return !models_.empty(); }
  // Starts the workers' health checks.
  void start();
  // A reload (docs/reload.md): the models become those of `models`. An equal definition stays as
  // it is; a new one starts; a removed or changed one takes no new request and stops once its
  // requests in flight have finished (at the latest after its request_timeout and a second). A
  // changed model's new version adopts what the old one learnt (llm::Model::adopt).
  void reconfigure(const std::vector<config::Model>& models);
  // Waits up to `grace` for model requests in flight to finish (their answers still go out),
  // those of versions a reload retired included.
  boost::asio::awaitable<void> drain(std::chrono::milliseconds grace);
  void stop();

  boost::asio::awaitable<void> post(transport::Exchange& ex, std::string_view path);
  boost::asio::awaitable<void> models(transport::Exchange& ex);

  std::shared_ptr<llm::Model> find(std::string_view name);
  // The token records of models with record_tokens (GET /v1/trajectories/ID/model_calls).
  llm::TokenRecords& token_records() { return token_records_; }

 private:
  void register_metrics();
  void register_token_metrics();

  void start_health(const std::shared_ptr<llm::Model>& model);
  // Stops `model` once no request uses it (or its longest request could not still run).
  void retire(std::shared_ptr<llm::Model> model);

  gateway::Gateway& gateway_;
  bool started_ = false;
  // A request holds its model (shared) until its answer: a reload may replace it meanwhile.
  std::vector<std::shared_ptr<llm::Model>> models_;
  std::vector<std::weak_ptr<llm::Model>> retiring_;  // replaced or removed, not yet stopped
  llm::TokenRecords token_records_;
};

// The prompt text a routing policy keys on: the messages' roles and text contents in order
// (chat), or the prompt (completions). Empty if the body has neither.
std::string prompt_key(const boost::json::object& body, bool chat);

// "sha256:HEX" of the request's `messages` (chat) or `prompt` (completions) as compact JSON
// (boost::json's serialisation: keys in request order, no spaces, UTF-8 unescaped); empty if
// the body has neither.
std::string messages_hash(const boost::json::object& body, bool chat);

}  // namespace toolbridge::frontend
