#pragma once
// The admission stage: a call takes one slot of every limit it is under (Admission) before it
// goes on to retry, breaker, deadline and dispatch, and holds them until its answer — across
// retries, since the permit lives in this stage's frame. A call that cannot go waits in its
// server's fair queue until admitted, cancelled or its deadline (queue time counts against it);
// with the queue full it is shed at once with a message saying when to retry. Servers without
// any limit step over the stage without a coroutine frame.
#include <boost/asio/io_context.hpp>
#include <boost/json/object.hpp>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/clock.h"
#include "call/stage.h"
#include "config/config.h"
#include "policy/admission.h"
#include "telemetry/metrics.h"

namespace toolbridge::policy {

class AdmissionStage final : public call::Stage {
 public:
  AdmissionStage(boost::asio::io_context& io, const config::Config& config,
                 telemetry::Metrics& metrics, const base::Clock& clock);

  std::string_view name() const override { return "admission"; }
  bool applies(const call::Call& call) const override {
    return admission_->applies(call.route.server);
  }
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next next) override;

  const Admission& admission() const { return *admission_; }
  Admission& admission() { return *admission_; }
  // Limits, calls in flight and queues, for /healthz.
  boost::json::object health() const;

 private:
  // The series of one (server, tenant label) pair, looked up once.
  struct Series {
    std::uint64_t* admitted = nullptr;
    std::uint64_t* shed = nullptr;
    std::uint64_t* expired = nullptr;
    telemetry::Histogram* queue_wait = nullptr;
    telemetry::Histogram* execution = nullptr;
  };
  Series& series(const std::string& server, const std::string& tenant);
  // Tenants named in the config keep their name in metrics; every other one is "other".
  const std::string& tenant_label(const std::string& tenant) const;
  void register_gauges();

  boost::asio::io_context& io_;
  const config::Config& config_;
  telemetry::Metrics& metrics_;
  const base::Clock& clock_;
  std::shared_ptr<Admission> admission_;
  std::unordered_map<std::string, Series> series_;
};

}  // namespace toolbridge::policy
