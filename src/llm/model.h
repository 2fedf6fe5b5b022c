#pragma once
// A model the gateway routes: its workers (load, breaker, metrics), its routing policy and the
// HTTP client pool the requests go out on. The front end (frontend/openai.*) runs requests;
// this keeps the state they share.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/in_flight.h"
#include "config/model.h"
#include "llm/routing.h"
#include "telemetry/metrics.h"
#include "transport/http_client.h"
#include "transport/url.h"

namespace toolbridge::llm {

struct Worker {
  config::ModelWorker config;
  transport::Url url;  // target: the URL's path, to which /v1/... is appended
  std::size_t in_flight = 0;
  // Breaker: consecutive failures (connection errors, 5xx) open it until open_until; then one
  // request (or a health check) probes it.
  std::size_t failures = 0;
  bool open = false;
  bool probing = false;
  base::Clock::time_point open_until{};
  // Metrics cells (labels model, worker).
  std::uint64_t* requests_ok = nullptr;
  std::uint64_t* requests_failed = nullptr;
  std::uint64_t* prompt_tokens = nullptr;
  std::uint64_t* cached_tokens = nullptr;
  std::uint64_t* spills = nullptr;
  telemetry::Histogram* ttft = nullptr;
  telemetry::Histogram* latency = nullptr;
};

class Model {
 public:
  Model(const boost::asio::any_io_executor& ex, const config::Model& config,
        telemetry::Metrics& metrics, const base::Clock& clock);
  ~Model();

  const config::Model& config() const { return config_; }
  const std::string& name() const { return config_.name; }
  std::vector<Worker>& workers() { return workers_; }
  const std::vector<Worker>& workers() const { return workers_; }
  transport::HttpClient& client() { return *client_; }
  RoutingPolicy& policy() { return *policy_; }

  // A worker for the request, skipping those in `tried` while others are available and those
  // whose breaker is open. nullopt if none can take it.
  std::optional<RouteChoice> pick(const RouteInput& in, const std::vector<bool>& tried);
  void succeeded(std::size_t worker);
  // A connection error or 5xx: counts toward the worker's breaker.
  void failed(std::size_t worker);
  // The attempt ended without telling (the client left, a 429): a probe slot is given back.
  void released(std::size_t worker) { workers_[worker].probing = false; }
  bool available(std::size_t worker) const;
  // A request went out to `worker` / its exchange with the worker ended (each start ends once).
  void sent(std::size_t worker) {
    ++workers_[worker].in_flight;
    requests_.add();
  }
  void ended(std::size_t worker) {
    --workers_[worker].in_flight;
    requests_.done();
  }
  // The requests in flight on every worker (a drain waits for zero).
  base::InFlight& requests() { return requests_; }
  // The requests that chose this model, from the lookup of its name to their answer (each holds
  // a token): a reload that replaces or removes the model retires it when this reaches zero.
  base::InFlight& users() { return users_; }

  // A reload replaced `old` (same name) with this: what it learnt carries over where it still
  // holds. A worker with the same name and URL keeps its breaker state; the routing policy (the
  // prefix tree of prefix_aware) is shared when the routing, its parameters and the workers
  // (names and URLs, in order) are unchanged.
  void adopt(const Model& old);

  std::uint64_t& retries() { return *retries_; }

  // Probes workers whose breaker is open (GET /health every health_interval); a worker that
  // answers is let back in for one request. Runs until stop().
  boost::asio::awaitable<void> health_loop();
  void stop();

 private:
  void open_breaker(Worker& w);

  config::Model config_;
  const base::Clock& clock_;
  std::unique_ptr<transport::HttpClient> client_;
  std::vector<Worker> workers_;
  base::InFlight requests_;
  base::InFlight users_;
  // Shared with the version a reload replaced while that one finishes its requests.
  std::shared_ptr<RoutingPolicy> policy_;
  std::uint64_t* retries_ = nullptr;
  base::Timer health_timer_;
  bool stopped_ = false;
};

}  // namespace toolbridge::llm
