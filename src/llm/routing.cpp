#include "llm/routing.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace toolbridge::llm {

std::uint64_t stable_hash(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  // splitmix64's finaliser: FNV alone clusters short keys that differ in their last bytes.
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

std::optional<std::size_t> least_loaded(std::span<const WorkerLoad> w, std::size_t start) {
  std::optional<std::size_t> best;
  for (std::size_t k = 0; k < w.size(); ++k) {
    const std::size_t i = (start + k) % w.size();
    if (!w[i].available) continue;
    if (!best || w[i].in_flight < w[*best].in_flight) best = i;
  }
  return best;
}

namespace {

struct Totals {
  std::size_t in_flight = 0;
  std::size_t available = 0;
};

Totals totals(std::span<const WorkerLoad> w) {
  Totals t;
  for (const auto& x : w) {
    if (!x.available) continue;
    t.in_flight += x.in_flight;
    ++t.available;
  }
  return t;
}

class RoundRobinPolicy final : public RoutingPolicy {
 public:
  std::optional<RouteChoice> pick(const RouteInput&, std::span<const WorkerLoad> w) override {
    for (std::size_t k = 0; k < w.size(); ++k) {
      const std::size_t i = next_++ % w.size();
      if (w[i].available) return RouteChoice{i};
    }
    return std::nullopt;
  }

 private:
  std::size_t next_ = 0;
};

class LeastOutstandingPolicy final : public RoutingPolicy {
 public:
  std::optional<RouteChoice> pick(const RouteInput&, std::span<const WorkerLoad> w) override {
    // Ties rotate, so an idle model spreads its requests instead of piling them on worker 0.
    const auto i = least_loaded(w, w.empty() ? 0 : next_++ % w.size());
    if (!i) return std::nullopt;
    return RouteChoice{*i};
  }

 private:
  std::size_t next_ = 0;
};

}  // namespace

AffinityPolicy::AffinityPolicy(const std::vector<std::string>& names, double load_factor,
                               std::size_t points_per_worker)
    : load_factor_(std::max(load_factor, 1.0)) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (std::size_t p = 0; p < points_per_worker; ++p) {
      const std::string key = names[i] + '#' + std::to_string(p);
      ring_.emplace_back(stable_hash(key), i);
    }
  }
  std::sort(ring_.begin(), ring_.end());
}

std::size_t AffinityPolicy::home(std::string_view trajectory) const {
  if (ring_.empty()) return 0;
  const std::uint64_t h = stable_hash(trajectory);
  auto it = std::lower_bound(ring_.begin(), ring_.end(), std::pair{h, std::size_t{0}});
  if (it == ring_.end()) it = ring_.begin();
  return it->second;
}

std::optional<RouteChoice> AffinityPolicy::pick(const RouteInput& in,
                                                std::span<const WorkerLoad> w) {
  if (in.trajectory.empty() || ring_.empty()) {
    const auto i = least_loaded(w, w.empty() ? 0 : next_++ % w.size());
    if (!i) return std::nullopt;
    return RouteChoice{*i};
  }
  const Totals t = totals(w);
  if (t.available == 0) return std::nullopt;
  // Bounded loads (Mirrokni, Thorup, Zadimoghaddam): counting this request, no worker may hold
  // more than ceil(c x mean).
  const double mean = static_cast<double>(t.in_flight + 1) / static_cast<double>(t.available);
  const auto cap = static_cast<std::size_t>(std::ceil(load_factor_ * mean));
  const std::uint64_t h = stable_hash(in.trajectory);
  auto start = std::lower_bound(ring_.begin(), ring_.end(), std::pair{h, std::size_t{0}});
  const std::size_t first = static_cast<std::size_t>(start - ring_.begin()) % ring_.size();
  std::optional<std::size_t> preferred;  // the first available worker on the ring
  for (std::size_t k = 0; k < ring_.size(); ++k) {
    const std::size_t i = ring_[(first + k) % ring_.size()].second;
    if (i >= w.size() || !w[i].available) continue;
    if (!preferred) preferred = i;
    if (w[i].in_flight < cap) return RouteChoice{i, i != *preferred};
  }
  // Unreachable while cap >= 1 and a worker is available; kept for safety.
  return RouteChoice{*preferred};
}

PrefixAwarePolicy::PrefixAwarePolicy(const config::Model& model)
    : tree_(model.prefix_tree_max_bytes),
      min_match_(model.prefix_min_match),
      balance_(model.prefix_balance),
      slack_(model.prefix_balance_slack) {}

std::optional<RouteChoice> PrefixAwarePolicy::pick(const RouteInput& in,
                                                   std::span<const WorkerLoad> w) {
  const Totals t = totals(w);
  if (t.available == 0) return std::nullopt;
  const double mean = static_cast<double>(t.in_flight) / static_cast<double>(t.available);
  const double limit = balance_ * mean + static_cast<double>(slack_);
  const std::vector<std::size_t> matched = tree_.match(in.prompt, w.size());
  const std::size_t start = next_++ % w.size();
  std::optional<std::size_t> best;  // longest match among workers that are not overloaded
  std::size_t best_any = 0;         // longest match among all available workers
  for (std::size_t k = 0; k < w.size(); ++k) {
    const std::size_t i = (start + k) % w.size();
    if (!w[i].available) continue;
    const std::size_t m = i < matched.size() ? matched[i] : 0;
    best_any = std::max(best_any, m);
    if (static_cast<double>(w[i].in_flight) > limit) continue;
    if (!best || m > matched[*best] || (m == matched[*best] && w[i].in_flight < w[*best].in_flight))
      best = i;
  }
  const double needed = min_match_ * static_cast<double>(in.prompt.size());
  if (best && matched[*best] > 0 && static_cast<double>(matched[*best]) >= needed) {
    return RouteChoice{*best, matched[*best] < best_any, matched[*best]};
  }
  const auto i = least_loaded(w, start);
  if (!i) return std::nullopt;
  const std::size_t m = *i < matched.size() ? matched[*i] : 0;
  // A long enough match existed but only on overloaded workers: that is a spill.
  const bool spilled = best_any > 0 && static_cast<double>(best_any) >= needed && m < best_any;
  return RouteChoice{*i, spilled, m};
}

void PrefixAwarePolicy::routed(const RouteInput& in, std::size_t worker) {
  tree_.insert(in.prompt, worker);
}

std::unique_ptr<RoutingPolicy> make_policy(const config::Model& model,
                                           const std::vector<std::string>& names) {
  switch (model.routing) {
    case config::Routing::kRoundRobin:
      return std::make_unique<RoundRobinPolicy>();
    case config::Routing::kLeastOutstanding:
      return std::make_unique<LeastOutstandingPolicy>();
    case config::Routing::kAffinity:
      return std::make_unique<AffinityPolicy>(names, model.load_factor);
    case config::Routing::kPrefixAware:
      return std::make_unique<PrefixAwarePolicy>(model);
  }
  return std::make_unique<LeastOutstandingPolicy>();
}

}  // namespace toolbridge::llm
