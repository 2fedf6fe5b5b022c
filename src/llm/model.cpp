#include "llm/model.h"

#include <spdlog/spdlog.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace toolbridge::llm {

namespace asio = boost::asio;

namespace {

transport::HttpClientOptions client_options(const config::Model& m) {
  transport::HttpClientOptions o;
  o.connect_timeout = m.connect_timeout;
  o.handshake_timeout = m.connect_timeout;
  o.max_connections = m.max_connections;
  o.max_idle = m.max_connections;
  return o;
}

}  // namespace

Model::Model(const asio::any_io_executor& ex, const config::Model& config,
             telemetry::Metrics& metrics, const base::Clock& clock)
    : config_(config),
      clock_(clock),
      client_(std::make_unique<transport::HttpClient>(ex, client_options(config))),
      requests_(clock),
      users_(clock),
      health_timer_(ex, clock) {
  std::vector<std::string> names;
  for (const auto& wc : config_.workers) {
    Worker w;
    w.config = wc;
    if (auto url = transport::parse_url(wc.url)) {
      w.url = std::move(*url);
      if (w.url.target == "/") w.url.target.clear();
    } else {
      spdlog::error("model {}: worker {}: {}", config_.name, wc.name, url.error());
    }
    const std::string l = telemetry::labels({{"model", config_.name}, {"worker", wc.name}});
    const std::string ok =
        telemetry::labels({{"model", config_.name}, {"worker", wc.name}, {"outcome", "ok"}});
    const std::string bad =
        telemetry::labels({{"model", config_.name}, {"worker", wc.name}, {"outcome", "error"}});
    w.requests_ok = &metrics.counter_cell("toolbridge_llm_requests_total", ok);
    w.requests_failed = &metrics.counter_cell("toolbridge_llm_requests_total", bad);
    w.prompt_tokens = &metrics.counter_cell("toolbridge_llm_prompt_tokens_total", l);
    w.cached_tokens = &metrics.counter_cell("toolbridge_llm_cached_tokens_total", l);
    w.spills = &metrics.counter_cell("toolbridge_llm_spills_total", l);
    w.ttft = &metrics.histogram_cell("toolbridge_llm_ttft_seconds", l);
    w.latency = &metrics.histogram_cell("toolbridge_llm_latency_seconds", l);
    names.push_back(wc.name);
    workers_.push_back(std::move(w));
  }
  retries_ = &metrics.counter_cell("toolbridge_llm_retries_total",
                                   telemetry::labels({{"model", config_.name}}));
  policy_ = make_policy(config_, names);
}

Model::~Model() = default;

namespace {

// The routing decisions of `a` and `b` would be the same given the same history.
bool same_routing(const config::Model& a, const config::Model& b) {
  if (a.routing != b.routing || a.workers != b.workers) return false;
  switch (a.routing) {
    case config::Routing::kAffinity:
      return a.load_factor == b.load_factor;
    case config::Routing::kPrefixAware:
      return a.prefix_min_match == b.prefix_min_match && a.prefix_balance == b.prefix_balance &&
             a.prefix_balance_slack == b.prefix_balance_slack &&
             a.prefix_tree_max_bytes == b.prefix_tree_max_bytes;
    default:
      return true;
  }
}

}  // namespace

void Model::adopt(const Model& old) {
  for (Worker& w : workers_) {
    for (const Worker& o : old.workers_) {
      if (o.config != w.config) continue;
      w.failures = o.failures;
      w.open = o.open;
      w.open_until = o.open_until;
    }
  }
  if (same_routing(config_, old.config_)) policy_ = old.policy_;
}

bool Model::available(std::size_t i) const {
  const Worker& w = workers_[i];
  if (w.url.host.empty()) return false;
  if (!w.open) return true;
  // Half-open: after the cooldown, one request at a time probes it.
  return !w.probing && clock_.now() >= w.open_until;
}

std::optional<RouteChoice> Model::pick(const RouteInput& in, const std::vector<bool>& tried) {
  std::vector<WorkerLoad> loads(workers_.size());
  bool any_untried = false;
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    loads[i].in_flight = workers_[i].in_flight;
    loads[i].available = available(i);
    if (loads[i].available && !(i < tried.size() && tried[i])) any_untried = true;
  }
  // Another worker when there is one; the same one again only when it is the last left.
  if (any_untried) {
    for (std::size_t i = 0; i < loads.size() && i < tried.size(); ++i)
      if (tried[i]) loads[i].available = false;
  }
  auto choice = policy_->pick(in, loads);
  if (!choice) return choice;
  Worker& w = workers_[choice->worker];
  if (w.open) w.probing = true;
  if (choice->spilled) ++*w.spills;
  return choice;
}

void Model::succeeded(std::size_t i) {
  Worker& w = workers_[i];
  if (w.open) spdlog::info("model {}: worker {} answers again", config_.name, w.config.name);
  w.failures = 0;
  w.open = false;
  w.probing = false;
}

void Model::open_breaker(Worker& w) {
  if (!w.open)
    spdlog::warn("model {}: worker {} out of rotation for {} ms after {} failures", config_.name,
                 w.config.name, config_.breaker_cooldown.count(), w.failures);
  w.open = true;
  w.probing = false;
  w.open_until = clock_.now() + config_.breaker_cooldown;
}

void Model::failed(std::size_t i) {
  Worker& w = workers_[i];
  ++w.failures;
  if (config_.breaker_threshold == 0) return;
  if (w.open || w.failures >= config_.breaker_threshold) {
    // Its cache is gone or soon will be: stop steering prefixes to it.
    if (!w.open) policy_->forget(i);
    open_breaker(w);
  }
}

asio::awaitable<void> Model::health_loop() {
  while (!stopped_) {
    health_timer_.expires_after(config_.health_interval);
    boost::system::error_code ec;
    co_await health_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (stopped_) break;
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      if (!workers_[i].open || workers_[i].probing) continue;
      transport::HttpRequest req;
      req.verb = transport::http::verb::get;
      req.url = workers_[i].url;
      req.url.target += "/health";
      req.lease = transport::Lease::kUnbounded;
      req.header_timeout = config_.connect_timeout;
      req.body_timeout = config_.connect_timeout;
      req.write_timeout = config_.connect_timeout;
      transport::HttpResponse resp = co_await client_->fetch(req, 64 << 10);
      if (stopped_) co_return;
      if (!resp.error && resp.status == 200) {
        // Let it back in now for one probing request rather than after the whole cooldown.
        workers_[i].open_until = clock_.now();
      }
    }
  }
}

void Model::stop() {
  stopped_ = true;
  health_timer_.cancel();
  client_->close();
}

}  // namespace toolbridge::llm
