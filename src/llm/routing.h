#pragma once
// Routing policies of a model: which worker gets a request. Pure decisions over the workers'
// loads and availability (no I/O, no clock), so unit tests drive them directly.
//   round_robin        the next available worker in turn
//   least_outstanding  the available worker with the fewest requests in flight
//   affinity           the trajectory id hashed onto a ring of workers (consistent hashing with
//                      bounded loads: a worker above load_factor x the mean load spills to the
//                      next one on the ring); no trajectory id: least outstanding
//   prefix_aware       the worker recently sent the longest prefix of this prompt, if that covers
//                      prefix_min_match of it and the worker is not overloaded (more than
//                      prefix_balance x the mean load + prefix_balance_slack in flight); else the
//                      least loaded
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/model.h"
#include "llm/radix_tree.h"

namespace toolbridge::llm {

// What a policy sees of one worker.
struct WorkerLoad {
  std::size_t in_flight = 0;
  bool available = true;  // healthy, breaker closed, not already tried by this request
};

// What a policy sees of one request.
struct RouteInput {
  std::string_view trajectory;  // empty if the request names none
  std::string_view prompt;      // the prompt text (messages rendered in order)
};

struct RouteChoice {
  std::size_t worker = 0;
  // Not the worker the policy preferred (affinity's home, prefix's longest match) because that
  // one was overloaded.
  bool spilled = false;
  std::size_t matched = 0;  // prefix_aware: prompt bytes the chosen worker was already sent
};

class RoutingPolicy {
 public:
  virtual ~RoutingPolicy() = default;
  // nullopt when no worker is available.
  virtual std::optional<RouteChoice> pick(const RouteInput& in, std::span<const WorkerLoad> w) = 0;
  // The request went to `worker` (prefix_aware remembers its prompt).
  virtual void routed(const RouteInput&, std::size_t /*worker*/) {}
  // `worker` lost its cache (it died or restarted).
  virtual void forget(std::size_t /*worker*/) {}
};

// `names` identify the workers on the affinity ring (stable across restarts and configs).
std::unique_ptr<RoutingPolicy> make_policy(const config::Model& model,
                                           const std::vector<std::string>& names);

// The available worker with the fewest in flight; ties go to the first at or after `start`.
std::optional<std::size_t> least_loaded(std::span<const WorkerLoad> w, std::size_t start = 0);

// A stable 64-bit hash (FNV-1a, then a finalising mix): the same on every run and machine.
std::uint64_t stable_hash(std::string_view s);

class AffinityPolicy final : public RoutingPolicy {
 public:
  AffinityPolicy(const std::vector<std::string>& names, double load_factor,
                 std::size_t points_per_worker = 160);
  std::optional<RouteChoice> pick(const RouteInput& in, std::span<const WorkerLoad> w) override;
  // The worker `trajectory` maps to when every worker is available and idle (tests).
  std::size_t home(std::string_view trajectory) const;

 private:
  std::vector<std::pair<std::uint64_t, std::size_t>> ring_;  // (point, worker), sorted
  double load_factor_;
  std::size_t next_ = 0;  // tie-breaking start for requests without a trajectory
};

class PrefixAwarePolicy final : public RoutingPolicy {
 public:
  explicit PrefixAwarePolicy(const config::Model& model);
  std::optional<RouteChoice> pick(const RouteInput& in, std::span<const WorkerLoad> w) override;
  void routed(const RouteInput& in, std::size_t worker) override;
  void forget(std::size_t worker) override { tree_.forget_worker(worker); }
  const RadixTree& tree() const { return tree_; }

 private:
  RadixTree tree_;
  double min_match_;
  double balance_;
  std::size_t slack_;
  std::size_t next_ = 0;
};

}  // namespace toolbridge::llm
