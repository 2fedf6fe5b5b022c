#pragma once
// Which members to retire on purpose, and which session bindings have expired: decisions over
// plain values that take `now`, so they are tested with a manual clock. (Resident memory is
// measured by the supervisor; only the byte limit is compared here.)
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/clock.h"

namespace toolbridge::upstream {

// What recycling needs to know about one member.
struct MemberUse {
  bool ready = false;  // takes calls (not starting, not retiring)
  base::Clock::time_point ready_at{};
  base::Clock::time_point last_used{};
  std::uint64_t calls = 0;
  std::size_t in_flight = 0;
};

struct RecycleLimits {
  std::uint64_t max_calls = 0;            // 0: never
  std::chrono::milliseconds max_age{0};   // 0: never
  std::chrono::milliseconds idle_ttl{0};  // 0: never
  std::size_t min_members = 0;            // pool: kept even when idle
  std::size_t spares = 0;                 // pool: idle members kept beyond the busy ones
};

class Recycling {
 public:
  using time_point = base::Clock::time_point;
  explicit Recycling(RecycleLimits limits) : limits_(limits) {}

  // It has served max_calls calls.
  bool calls_exhausted(std::uint64_t calls) const;
  // It has been ready for max_age.
  bool too_old(const MemberUse& m, time_point now) const;
  // Ready, nothing in flight, and unused for idle_ttl.
  bool idle_too_long(const MemberUse& m, time_point now) const;
  // pool: the members (indexes, in order) to retire for idleness, shrinking towards min_members
  // while keeping `spares` idle; `live` counts the members that are neither retiring nor gone.
  std::vector<std::size_t> idle_pool_members(std::span<const MemberUse> members, std::size_t live,
                                             time_point now) const;

 private:
  RecycleLimits limits_;
};

// per_session: a binding whose session has not called since `cutoff` and has nothing in flight.
struct BindingUse {
  std::string key;
  base::Clock::time_point last_used{};
  bool busy = false;
};
std::vector<std::string> expired_bindings(std::span<const BindingUse> bindings,
                                          base::Clock::time_point cutoff);

}  // namespace toolbridge::upstream
