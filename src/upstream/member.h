#pragma once
// One instance as the supervisor keeps it: its life-cycle state and what recycling needs to know
// about its use. The state only moves forward: starting -> ready -> retiring -> stopping -> exited
// (a member may skip states, e.g. a start that fails goes straight to exited).
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/clock.h"
#include "upstream/instance.h"

namespace toolbridge::upstream {

enum class MemberState {
  kStarting,  // spawning and initialising; takes no calls yet
  kReady,     // takes calls
  kRetiring,  // takes no new calls; stopped once its calls in flight finish
  kStopping,  // being stopped (stdin closed, then signals)
  kExited,    // gone; kept only while a session binding still points at it
};

struct Member {
  std::shared_ptr<Instance> inst;
  std::string key;  // per_session: the session it serves; empty while it is a spare
  std::string dir;  // its ${session.dir}; empty when the config does not use one
  MemberState state = MemberState::kStarting;
  base::Clock::time_point ready_at{};
  base::Clock::time_point last_used{};
  std::uint64_t calls = 0;

  bool ready() const { return state == MemberState::kReady; }
  bool starting() const { return state == MemberState::kStarting; }
  // Counts towards the instances the policy keeps: neither on its way out nor gone.
  bool live() const { return state == MemberState::kStarting || state == MemberState::kReady; }
  bool exited() const { return state == MemberState::kExited; }
};

}  // namespace toolbridge::upstream
