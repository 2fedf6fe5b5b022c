#include "policy/admission_stage.h"

#include <fmt/format.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <map>

#include "upstream/upstream.h"

namespace toolbridge::policy {

namespace asio = boost::asio;
namespace bj = boost::json;
using call::Fault;
using call::Result;

namespace {

const std::string kOtherTenant = "other";
// /healthz lists at most this many tenants waiting at one server.
constexpr std::size_t kMaxTenantsShown = 32;

double seconds(base::Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// A call waiting in a server's queue: admitted(), a cancel and the deadline all end its wait.
class QueuedCall final : public AdmissionWaiter, public call::Abandonable {
 public:
  QueuedCall(asio::io_context& io, std::shared_ptr<Admission> admission,
             const AdmissionRequest& request, const base::Clock& clock,
             call::Call::Clock::time_point deadline)
      : AdmissionWaiter(request, clock.now()),
        timer(io, clock, deadline),
        deadline_(deadline),
        clock_(clock),
        admission_(std::move(admission)) {}
  ~QueuedCall() override {
    if (queued()) admission_->withdraw(*this);
  }
  void admitted(Permit p) override {
    timer.cancel();
    // The deadline passed just as a slot came free (the timer's completion has not run yet): the
    // slot goes on to the next call at once (releasing it here pumps again), not to a call that
    // would only fail at the deadline stage.
    if (clock_.now() >= deadline_) {
      late = true;
      return;
    }
    permit = std::move(p);
  }
  void abandon(const std::string&) override { timer.cancel(); }

  Permit permit;
  base::Timer timer;
  bool late = false;  // admitted after its deadline: the slot was passed on

 private:
  call::Call::Clock::time_point deadline_;
  const base::Clock& clock_;
  std::shared_ptr<Admission> admission_;
};

}  // namespace

AdmissionStage::AdmissionStage(asio::io_context& io, const config::Config& config,
                               telemetry::Metrics& metrics, const base::Clock& clock)
    : io_(io),
      config_(config),
      metrics_(metrics),
      clock_(clock),
      admission_(std::make_shared<Admission>(config, clock)) {
  metrics_.describe("toolbridge_admission_admitted_total", "counter",
                    "Calls admitted by admission control, by server and tenant.");
  metrics_.describe("toolbridge_admission_shed_total", "counter",
                    "Calls refused at once because the server's admission queue was full.");
  metrics_.describe("toolbridge_admission_expired_total", "counter",
                    "Calls whose deadline passed while they waited in an admission queue.");
  metrics_.describe("toolbridge_admission_queue_wait_seconds", "histogram",
                    "Time admitted calls waited for their slots (0 when admitted at once).");
  metrics_.describe("toolbridge_admission_execution_seconds", "histogram",
                    "Time from admission to the answer (the slots are held this long).");
  register_gauges();
}

const std::string& AdmissionStage::tenant_label(const std::string& tenant) const {
  auto it = config_.gateway.tenants.find(tenant);
  return it == config_.gateway.tenants.end() ? kOtherTenant : it->first;
}

AdmissionStage::Series& AdmissionStage::series(const std::string& server,
                                               const std::string& tenant) {
  const std::string& label = tenant_label(tenant);
  std::string key = server;
  key += '\n';
  key += label;
  auto [it, fresh] = series_.try_emplace(std::move(key));
  Series& s = it->second;
  if (fresh) {
    const std::string labels = telemetry::labels({{"server", server}, {"tenant", label}});
    s.admitted = &metrics_.counter_cell("toolbridge_admission_admitted_total", labels);
    s.shed = &metrics_.counter_cell("toolbridge_admission_shed_total", labels);
    s.expired = &metrics_.counter_cell("toolbridge_admission_expired_total", labels);
    s.queue_wait = &metrics_.histogram_cell("toolbridge_admission_queue_wait_seconds", labels);
    s.execution = &metrics_.histogram_cell("toolbridge_admission_execution_seconds", labels);
  }
  return s;
}

void AdmissionStage::register_gauges() {
  std::weak_ptr<Admission> weak = admission_;
  metrics_.gauge(
      "toolbridge_admission_queue_depth", "Calls waiting in a server's admission queue, by tenant.",
      [this, weak](std::vector<std::pair<std::string, double>>& out) {
        auto a = weak.lock();
        if (!a) return;
        for (const auto& s : a->servers()) {
          std::map<std::string_view, double> by_label;
          for (const auto& [tenant, n] : s.queued_by_tenant)
            by_label[tenant_label(std::string(tenant))] += static_cast<double>(n);
          for (const auto& [label, n] : by_label)
            out.emplace_back(telemetry::labels({{"server", s.name}, {"tenant", label}}), n);
        }
      });
  metrics_.gauge("toolbridge_admission_in_flight", "Admitted calls not yet answered, by server.",
                 [weak](std::vector<std::pair<std::string, double>>& out) {
                   auto a = weak.lock();
                   if (!a) return;
                   for (const auto& s : a->servers()) {
                     out.emplace_back(telemetry::labels({{"server", s.name}}),
                                      static_cast<double>(s.in_flight));
                   }
                 });
  metrics_.gauge(
      "toolbridge_admission_limit", "A server's concurrency limit (the current one when adaptive).",
      [weak](std::vector<std::pair<std::string, double>>& out) {
        auto a = weak.lock();
        if (!a) return;
        for (const auto& s : a->servers()) {
          if (s.limit == 0) continue;
          out.emplace_back(telemetry::labels({{"server", s.name}}), static_cast<double>(s.limit));
        }
      });
}

asio::awaitable<Result> AdmissionStage::handle(call::Call& call, call::Next next) {
  // Time in the queue counts against the call's deadline.
  Series& series = this->series(call.route.server, call.tenant);
  const AdmissionRequest request{call.route.server, call.route.tool, call.tenant, call.trajectory};
  const auto arrived = clock_.now();
  Permit permit = admission_->try_admit(request);
  if (!permit) {
    auto waiter = std::make_shared<QueuedCall>(io_, admission_, request, clock_, call.deadline);
    if (!admission_->enqueue(*waiter)) {
      ++*series.shed;
      std::string why = admission_->overloaded_message(call.route.server);
      co_return Result::failure(Fault::kShed, std::move(why));
    }
    if (!waiter->permit) {
      call.set_in_flight(waiter);
      boost::system::error_code ec;
      co_await waiter->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (call.cancelled()) co_return Result::failure(Fault::kCancelled, "cancelled");
    if (!waiter->permit && waiter->late) {
      ++*series.expired;
      std::string why = fmt::format(
          "{} waited {:.1f} s in the admission queue of server '{}' and its deadline of {:g} s "
          "passed as a slot came free, before it could be sent: retry later or with a longer "
          "timeout",
          call.route.display_name, seconds(clock_.now() - arrived), call.route.server,
          static_cast<double>(call.timeout.count()) / 1000.0);
      co_return Result::failure(Fault::kTimeout, std::move(why));
    }
    if (!waiter->permit) {
      const Admission::Withdrawn w = admission_->withdraw(*waiter);
      ++*series.expired;
      std::string why = fmt::format(
          "{} waited {:.1f} s in the admission queue of server '{}' (position {} of {} queued "
          "calls) and its deadline of {:g} s passed before it could be sent; held by {}: retry "
          "later or with a longer timeout",
          call.route.display_name, seconds(clock_.now() - arrived), call.route.server, w.position,
          w.queued, static_cast<double>(call.timeout.count()) / 1000.0, w.held_by);
      co_return Result::failure(Fault::kTimeout, std::move(why));
    }
    permit = std::move(waiter->permit);
  }
  ++*series.admitted;
  series.queue_wait->observe(seconds(permit.admitted_at() - arrived));
  Result result = co_await next(call);
  series.execution->observe(seconds(clock_.now() - permit.admitted_at()));
  permit.release();
  co_return result;
}

bj::object AdmissionStage::health() const {
  const Admission& a = *admission_;
  bj::object tenants;
  for (const auto& [name, t] : config_.gateway.tenants) {
    tenants[name] = bj::object{{"limit", a.tenant_limit(name)},
                               {"weight", t.weight},
                               {"in_flight", a.tenant_in_flight(name)}};
  }
  bj::object servers;
  for (const auto& s : a.servers()) {
    bj::object queued_by_tenant;
    for (const auto& [tenant, n] : s.queued_by_tenant) {
      if (queued_by_tenant.size() >= kMaxTenantsShown) break;
      queued_by_tenant[tenant] = n;
    }
    bj::object tools;
    for (const auto& [tool, slot] : s.tools)
      tools[tool] = bj::object{{"limit", slot.limit}, {"in_flight", slot.in_use}};
    bj::object v{{"limit", s.limit},
                 {"adaptive", s.adaptive},
                 {"in_flight", s.in_flight},
                 {"queued", s.queued},
                 {"queued_by_tenant", std::move(queued_by_tenant)},
                 {"tool_limits", std::move(tools)}};
    if (s.adaptive) v["min_latency_ms"] = s.min_latency * 1000.0;
    servers[s.name] = std::move(v);
  }
  return bj::object{{"max_calls_in_flight", a.global().limit},
                    {"in_flight", a.global().in_use},
                    {"queue_size", a.queue_size()},
                    {"queued", a.queued_total()},
                    {"tenant_limit", config_.gateway.tenant_limit},
                    {"trajectory_limit", config_.gateway.trajectory_limit},
                    {"tenants", std::move(tenants)},
                    {"servers", std::move(servers)}};
}

}  // namespace toolbridge::policy
