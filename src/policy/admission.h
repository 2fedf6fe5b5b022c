#pragma once
// Admission control: limits on the calls in flight (the whole gateway, a server, a tool, a tenant,
// a trajectory), one bounded queue per server that is fair between tenants (deficit round robin
// by weight, FIFO within a tenant), and permits that hold one slot of every limit a call is under
// until its answer. A queued call holds no slot. No I/O and no timers here: the stage
// (admission_stage.h) waits, and unit tests drive this class with a ManualClock.
#include <array>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "config/config.h"
#include "policy/admission_adaptive.h"

namespace toolbridge::policy {

class Admission;

// Lookups by string_view without building a string.
struct AdmissionHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class T>
using AdmissionMap = std::unordered_map<std::string, T, AdmissionHash, std::equal_to<>>;

// What admission needs to know of a call. The views only need to outlive the call to
// try_admit(); a waiter keeps copies.
struct AdmissionRequest {
  std::string_view server;
  std::string_view tool;  // the server's own name; empty for methods other than tools/call
  std::string_view tenant;
  std::string_view trajectory;
};

// A limit and how much of it is in use. limit 0: no limit.
struct AdmissionSlot {
  std::size_t limit = 0;
  std::size_t in_use = 0;
  bool full() const { return limit > 0 && in_use >= limit; }
};

// One slot of every limit a call is under. Move-only; released exactly once (on destruction at
// the latest), which may admit calls waiting for it.
class Permit {
 public:
  Permit() = default;
  Permit(Permit&& other) noexcept { *this = std::move(other); }
  Permit& operator=(Permit&& other) noexcept;
  Permit(const Permit&) = delete;
  Permit& operator=(const Permit&) = delete;
  ~Permit() { release(); }

  explicit operator bool() const { return owner_ != nullptr; }
  void release();
  base::Clock::time_point admitted_at() const { return admitted_at_; }

 private:
  friend class Admission;
  enum Kind { kGlobal, kServer, kTool, kTenant, kTrajectory, kKinds };
  std::shared_ptr<Admission> owner_;
  std::array<AdmissionSlot*, kKinds> slots_{};
  void* server_ = nullptr;  // Admission's state of the server (for latency samples)
  std::string tenant_;      // to forget a tenant or trajectory slot when it falls to 0
  std::string trajectory_;
  base::Clock::time_point admitted_at_{};
};

// A call waiting in a server's queue. The stage's waiter wakes its coroutine in admitted().
class AdmissionWaiter {
 public:
  AdmissionWaiter(const AdmissionRequest& r, base::Clock::time_point now)
      : server(r.server),
        tool(r.tool),
        tenant(r.tenant),
        trajectory(r.trajectory),
        queued_at(now) {}
  virtual ~AdmissionWaiter() = default;
  // Called once, when the call gets its slots (it has left the queue).
  virtual void admitted(Permit permit) = 0;

  AdmissionRequest request() const { return {server, tool, tenant, trajectory}; }
  bool queued() const { return queued_; }

  const std::string server, tool, tenant, trajectory;
  const base::Clock::time_point queued_at;

 private:
  friend class Admission;
  bool queued_ = false;
};

class Admission : public std::enable_shared_from_this<Admission> {
 public:
  Admission(const config::Config& config, const base::Clock& clock);

  // False if no limit at all can apply to a call to `server`: the stage is stepped over.
  bool applies(std::string_view server) const;

  // A permit at once if nothing waits ahead and every limit has room; else an empty one.
  Permit try_admit(const AdmissionRequest& request);
  // Puts the waiter in its server's queue, then admits what can go (possibly this waiter, before
  // this returns). False if the queue is full: the call is to be shed.
  bool enqueue(AdmissionWaiter& waiter);
  // Takes a waiter out of the queue (its deadline passed, it was cancelled, it is destroyed).
  struct Withdrawn {
    std::size_t position = 0;  // 1-based, in its tenant's FIFO at that server
    std::size_t queued = 0;    // calls that were waiting for the server, this one included
    std::string held_by;       // the limit that held it at the end, as configured
  };
  Withdrawn withdraw(AdmissionWaiter& waiter);

  // "search is overloaded: 240 calls queued; retry in ~2 s".
  std::string overloaded_message(std::string_view server) const;
  // Seconds a caller refused now might wait before trying again (at least 1).
  std::size_t retry_after_seconds(std::string_view server) const;

  // For /healthz and metrics.
  struct ServerView {
    std::string_view name;
    std::size_t limit = 0;  // 0: none (the current one when adaptive)
    bool adaptive = false;
    double min_latency = 0;  // adaptive: the sampled minimum, seconds
    std::size_t in_flight = 0;
    std::size_t queued = 0;
    std::vector<std::pair<std::string_view, std::size_t>> queued_by_tenant;
    std::vector<std::pair<std::string_view, AdmissionSlot>> tools;
  };
  std::vector<ServerView> servers() const;
  const AdmissionSlot& global() const { return global_; }
  std::size_t queue_size() const { return queue_size_; }
  std::size_t tenant_in_flight(std::string_view tenant) const;
  std::size_t tenant_limit(std::string_view tenant) const;
  std::size_t trajectory_in_flight(std::string_view trajectory) const;
  std::size_t queued_total() const { return queued_total_; }

  // A reload (docs/reload.md): the limits become those of `config`: the gateway's
  // (`max_calls_in_flight`, `tenant_limit`, `tenants`, `trajectory_limit`,
  // `admission_queue_size`) and the servers' (`concurrency_limit`, `adaptive`, `tool_limits`).
  // Calls in flight keep their permits (a limit that did not exist when they were admitted does
  // not count them); a limit that shrank admits no new call until enough have finished, one that
  // grew admits waiting calls at once. A removed server's state stays (its last calls release
  // into it). Models take their `concurrency_limit` the same way.
  void reconfigure(const config::Config& config);

 private:
  friend class Permit;
  struct TenantQueue {
    double deficit = 0;
    std::deque<AdmissionWaiter*> calls;
  };
  struct Server {
    std::string name;
    AdmissionSlot slot;
    bool capacity = false;  // slot.limit is the server's capacity, not its concurrency_limit
    std::optional<AdaptiveLimit> adaptive;
    AdmissionMap<AdmissionSlot> tools;
    double mean_latency = 0;  // seconds, moving average (for the retry hint)
    // The queue: tenants with calls waiting, in round-robin order, and their FIFOs.
    std::deque<std::string> ring;
    AdmissionMap<TenantQueue> tenants;
    std::size_t queued = 0;
  };
  struct TenantSlot {
    AdmissionSlot slot;
    double weight = 1;
    bool configured = false;
  };
  enum class Block { kNone, kShared, kOwn };

  Server& server(std::string_view name);
  void configure_gateway(const config::Gateway& g);
  // Sets `s`'s limits from its config (at start and at a reload).
  void configure(Server& s, const config::Server& cfg);
  void configure_tools(Server& s, const config::Server& cfg);
  void configure_models(const std::vector<config::Model>& models);
  Server* find(std::string_view server);
  const Server* find(std::string_view server) const;
  Block blocked(const Server& s, const AdmissionRequest& r) const;
  // The config key of the first full limit a call is under ("" if none is full).
  std::string full_limit(const Server& s, const AdmissionRequest& r) const;
  Permit take(Server& s, const AdmissionRequest& r);
  void release(Permit& p);
  void pump();
  void pump(Server& s);
  double weight(const std::string& tenant) const;
  std::size_t limit_of_tenant(std::string_view tenant) const;

  const base::Clock& clock_;
  AdmissionSlot global_;
  std::size_t default_tenant_limit_ = 0;
  std::size_t trajectory_limit_ = 0;
  std::size_t queue_size_ = 0;
  bool limits_everywhere_ = false;  // a global, tenant or trajectory limit applies to every server
  std::vector<std::unique_ptr<Server>> servers_;
  AdmissionMap<Server*> by_name_;
  std::vector<std::string> model_names_;  // the configured models'
  AdmissionMap<TenantSlot> tenants_;
  AdmissionMap<AdmissionSlot> trajectories_;
  std::size_t queued_total_ = 0;
  std::size_t next_server_ = 0;  // where the next pump starts (servers share the global limit)
  bool pumping_ = false;
  bool repump_ = false;
};

}  // namespace toolbridge::policy
