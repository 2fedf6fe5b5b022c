#include "upstream/placement.h"

#include <algorithm>

namespace toolbridge::upstream {

namespace {

std::size_t least_loaded(std::span<const Candidate> candidates) {
  std::size_t best = Choice::kNone;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (!c.ready || c.retiring) continue;
    if (best == Choice::kNone || c.in_flight < candidates[best].in_flight) best = i;
  }
  return best;
}

std::size_t count_live(std::span<const Candidate> candidates) {
  return static_cast<std::size_t>(std::count_if(candidates.begin(), candidates.end(),
                                                [](const Candidate& c) { return !c.retiring; }));
}

std::size_t count_starting(std::span<const Candidate> candidates) {
  return static_cast<std::size_t>(
      std::count_if(candidates.begin(), candidates.end(),
                    [](const Candidate& c) { return !c.ready && !c.retiring; }));
}

// Nothing ready (idle shutdown, a pool scaled to zero, a restart): the call starts one unless one
// is on its way, and waits for it; unless starting is failing, which the caller hears at once.
Choice wait_for_a_start(std::span<const Candidate> candidates, const Situation& situation) {
  if (situation.failing) return Choice{};
  Choice out;
  out.wait = true;
  out.start = count_live(candidates) == 0 && !situation.backing_off;
  return out;
}

}  // namespace

Choice SharedPlacement::choose(std::span<const Candidate> candidates, std::string_view,
                               const Situation& situation) const {
  const std::size_t best = least_loaded(candidates);
  if (best != Choice::kNone) return Choice{best};
  return wait_for_a_start(candidates, situation);
}

Choice LeastLoadedPlacement::choose(std::span<const Candidate> candidates, std::string_view,
                                    const Situation& situation) const {
  const std::size_t best = least_loaded(candidates);
  if (best == Choice::kNone) return wait_for_a_start(candidates, situation);
  Choice out{best};
  // Queue pressure: every member has target_in_flight calls; add one (only one at a time).
  const std::size_t busy = candidates[best].in_flight;
  std::size_t starting = count_starting(candidates);
  if (busy >= target_in_flight_ && count_live(candidates) < max_members_ && starting == 0 &&
      !situation.backing_off) {
    out.start = true;
    ++starting;
  }
  // Past the per-member limit the call waits for the member that is starting, if there is one.
  if (busy >= max_in_flight_ && starting > 0) {
    out.member = Choice::kNone;
    out.wait = true;
  }
  return out;
}

Choice SessionAffinityPlacement::choose(std::span<const Candidate> candidates, std::string_view key,
                                        const Situation& situation) const {
  Choice out;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (key.empty() || c.key != key || c.retiring) continue;
    if (c.ready) return Choice{i};
    out.wait = true;  // its own member is starting
    return out;
  }
  // A new key: a warm spare if there is one, else a member of its own.
  for (std::size_t i = 0; spares_serve_keys_ && i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (c.key.empty() && c.ready && !c.retiring) return Choice{i};
  }
  if (situation.failing || situation.backing_off) return out;
  // Spares already starting serve the keys that arrived first; a key starts its own member only
  // when none is left for it (at the back of the start queue it would wait longer).
  std::size_t starting_spares = 0;
  for (const Candidate& c : candidates) {
    if (c.key.empty() && !c.ready && !c.retiring) ++starting_spares;
  }
  out.wait = true;
  if (spares_serve_keys_ && starting_spares > situation.others_waiting_for_spares) {
    out.queued = true;
    return out;
  }
  out.start = candidates.size() < max_members_;
  return out;
}

}  // namespace toolbridge::upstream
