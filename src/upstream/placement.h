#pragma once
// Where a call goes, as a policy over abstract candidates (a view of each member: ready,
// retiring, calls in flight, the key it is bound to), so the same strategies can place LLM
// requests on inference workers. A placement neither starts nor stops anything: it answers
// "this one", "start one more" and/or "wait", and the owner acts on it.
#include <cstddef>
#include <span>
#include <string_view>

namespace toolbridge::upstream {

struct Candidate {
  bool ready = false;     // takes calls now
  bool retiring = false;  // on its way out (or gone): takes no calls, counts for no capacity
  std::size_t in_flight = 0;
  std::string_view key;  // the session it is bound to; empty for a shared member or a spare
};

// What the owner knows about starting members and about other waiting calls.
struct Situation {
  bool failing = false;                       // the last start failed or crashed early
  bool backing_off = false;                   // no start may be tried yet
  std::size_t others_waiting_for_spares = 0;  // per-session: new sessions queued before this one
};

struct Choice {
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t member = kNone;  // index of the candidate that takes the call
  bool start = false;          // start one more member (per-session: bound to the call's key)
  bool wait = false;           // no member now: wait for one that is starting
  bool queued = false;         // per-session: the wait is for a spare that is already starting
  bool placed() const { return member != kNone; }
  // Neither a member nor a reason to wait: the owner says why nothing can take the call.
  bool refused() const { return member == kNone && !wait; }
};

class Placement {
 public:
  virtual ~Placement() = default;
  // `key`: the session (trajectory) of the call; only session affinity looks at it.
  virtual Choice choose(std::span<const Candidate> candidates, std::string_view key,
                        const Situation& situation) const = 0;
};

// One member multiplexes every call (two while one is being recycled: the ready one wins).
class SharedPlacement final : public Placement {
 public:
  Choice choose(std::span<const Candidate> candidates, std::string_view key,
                const Situation& situation) const override;
};

// The ready member with the fewest calls in flight; grows by one when every member has
// `target_in_flight` calls, and makes the call wait for the new one when even the least busy
// member has `max_in_flight`.
class LeastLoadedPlacement final : public Placement {
 public:
  LeastLoadedPlacement(std::size_t target_in_flight, std::size_t max_in_flight,
                       std::size_t max_members)
      : target_in_flight_(target_in_flight),
        max_in_flight_(max_in_flight),
        max_members_(max_members) {}
  Choice choose(std::span<const Candidate> candidates, std::string_view key,
                const Situation& situation) const override;

 private:
  std::size_t target_in_flight_;
  std::size_t max_in_flight_;
  std::size_t max_members_;
};

// Strict affinity: a key's calls all go to the member bound to it. A new key takes the first
// ready spare (an unbound member), else waits for a spare already starting (first come, first
// served), else starts a member of its own while fewer than `max_members` exist.
class SessionAffinityPlacement final : public Placement {
 public:
  // `spares_serve_keys`: false when each member is made for its key (args use ${session.id}).
  SessionAffinityPlacement(std::size_t max_members, bool spares_serve_keys)
      : max_members_(max_members), spares_serve_keys_(spares_serve_keys) {}
  Choice choose(std::span<const Candidate> candidates, std::string_view key,
                const Situation& situation) const override;

 private:
  std::size_t max_members_;
  bool spares_serve_keys_;
};

}  // namespace toolbridge::upstream
