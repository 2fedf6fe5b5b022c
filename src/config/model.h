#pragma once
// The `models` section: OpenAI-compatible inference workers behind /v1/chat/completions,
// /v1/completions and /v1/models, grouped by the model name clients send, each with its routing
// policy (src/llm/). docs/llm-routing.md lists the keys.
#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace toolbridge::config {

enum class Routing {
  kRoundRobin,
  kLeastOutstanding,
  kAffinity,     // trajectory id -> worker by consistent hashing with bounded loads
  kPrefixAware,  // longest recently sent prompt prefix, unless that worker is overloaded
};

struct ModelWorker {
  std::string url;   // http://host:port (the OpenAI paths are appended)
  std::string name;  // in metrics and X-Toolbridge-Worker; default: host:port
  bool operator==(const ModelWorker&) const = default;
};

struct Model {
  std::string name;  // the `model` value of requests
  std::vector<ModelWorker> workers;
  Routing routing = Routing::kPrefixAware;
  std::map<std::string, std::string> headers;  // sent to workers with every request (API keys)
  std::chrono::milliseconds request_timeout{600'000};  // whole request, queueing included
  std::chrono::milliseconds connect_timeout{5'000};
  std::chrono::milliseconds stream_idle_timeout{120'000};  // longest silence in a response
  std::size_t max_connections = 256;                       // per worker
  std::size_t max_response_bytes = 64u << 20;              // a non-streamed answer
  std::size_t concurrency_limit = 0;                       // admission: requests in flight
  // Failures (before the first byte reached the client): retries on other workers.
  std::size_t max_retries = 2;
  std::chrono::milliseconds retry_backoff{50};        // first wait; doubles, jittered +-50%
  std::chrono::milliseconds max_retry_after{10'000};  // a worker's Retry-After honoured up to
  // Per-worker breaker: this many consecutive failures take a worker out for breaker_cooldown;
  // then one request probes it. 0 disables.
  std::size_t breaker_threshold = 3;
  std::chrono::milliseconds breaker_cooldown{5'000};
  std::chrono::milliseconds health_interval{2'000};  // GET /health of workers out of rotation
  // affinity: a worker above load_factor x the mean load spills to the next on the ring. Load is
  // requests in flight, which swing by about their square root even when trajectories are spread
  // evenly: a low factor moves trajectories (a full prompt recompute each) for nothing (docs/llm-routing.md
  // "LLM routing" has the sweep behind the default).
  double load_factor = 3.0;
  // prefix_aware: the longest match wins when it covers at least prefix_min_match of the prompt
  // and its worker has at most prefix_balance x the mean load + prefix_balance_slack requests
  // in flight; otherwise the least loaded worker.
  double prefix_min_match = 0.5;
  double prefix_balance = 1.5;
  std::size_t prefix_balance_slack = 4;
  std::size_t prefix_tree_max_bytes = 32u << 20;  // prompt text kept per model
  // Keep each answer's token ids, logprobs, usage and timings per trajectory
  // (GET /v1/trajectories/ID/model_calls; docs/token-records.md).
  bool record_tokens = false;
  // A reload keeps a model whose definition is equal as it is (frontend/openai.cpp).
  bool operator==(const Model&) const = default;
};

std::string_view to_string(Routing r);

}  // namespace toolbridge::config
