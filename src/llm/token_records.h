#pragma once
// The token records of models with `record_tokens: true` (docs/token-records.md): per trajectory,
// one record per model call in turn order, read by GET /v1/trajectories/ID/model_calls.
// Bounded three ways, each with a documented rule and a count of what went:
//   - per trajectory, `max_turns` records and `trajectory_max_bytes`: its oldest turns go first
//     (counted in its `turns_dropped`);
//   - in all, `max_bytes`: the least recently active released trajectory goes first, whole; with
//     none released, the least recently active trajectory's oldest turns;
//   - in time: a trajectory is released once no model call of it came for `idle_ttl` (the
//     gateway's session_idle_ttl) or release() named it; its records stay `ttl` longer.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/clock.h"
#include "llm/token_scan.h"

namespace toolbridge::llm {

// One model call of a trajectory.
struct TokenRecord {
  std::uint64_t turn = 0;               // 0, 1, ... in the order the calls' answers ended
  std::string model, worker, endpoint;  // endpoint: chat/completions or completions
  std::string messages_hash;            // "sha256:HEX" of the request's messages (prompt)
  bool stream = false;
  int status = 0;            // the worker's HTTP status
  std::int64_t time_ms = 0;  // wall clock when the request arrived (ms since the Unix epoch)
  double queue_s = 0, ttft_s = 0, total_s = 0;
  bool complete = true;  // the answer ended as the worker meant it (not cut short)
  TokenData tokens;

  // What it holds in memory: itself and its vectors' and strings' heap blocks.
  std::size_t bytes() const;
};

class TokenRecords {
 public:
  using Clock = base::Clock;
  struct Limits {
    std::size_t max_bytes = 256u << 20;
    std::size_t trajectory_max_bytes = 32u << 20;
    std::size_t max_turns = 1024;
    Clock::duration idle_ttl = std::chrono::minutes(30);
    Clock::duration ttl = std::chrono::hours(1);
  };
  struct Trajectory {
    std::deque<TokenRecord> records;
    std::uint64_t next_turn = 0;
    std::uint64_t turns_dropped = 0;
    std::size_t bytes = 0;
    Clock::time_point last_activity;
    Clock::time_point released_at{};  // set by release(); else last_activity + idle_ttl
    bool released = false;
    std::list<const std::string*>::iterator recency;  // in recency_, most recent first
  };
  struct Counters {
    std::uint64_t kept = 0;
    // Records that went, by why: turns (max_turns), trajectory_bytes, max_bytes, expired.
    std::uint64_t dropped_turns = 0, dropped_trajectory_bytes = 0, dropped_max_bytes = 0,
                  dropped_expired = 0;
  };

  explicit TokenRecords(Limits limits) : limits_(limits) {}

  // Keeps `record` as the trajectory's next turn; the bounds then apply.
  void add(const std::string& trajectory, TokenRecord record, Clock::time_point now);
  // The trajectory was released (DELETE /sessions/NAME): its records age out from now.
  void release(const std::string& trajectory, Clock::time_point now);
  // Its records, or null when none are kept (never recorded, evicted, or aged out).
  const Trajectory* find(std::string_view trajectory, Clock::time_point now);
  // When a trajectory's records go (released_at + ttl), and whether it counts as released.
  bool is_released(const Trajectory& t, Clock::time_point now) const;
  Clock::time_point expires_at(const Trajectory& t) const;

  // The most ids and logprobs one record may hold (it would not fit a trajectory otherwise).
  std::size_t max_values() const;
  std::size_t bytes() const { return bytes_; }
  std::size_t trajectory_count() const { return trajectories_.size(); }
  const Counters& counters() const { return counters_; }
  const Limits& limits() const { return limits_; }

 private:
  void drop_front(Trajectory& t, std::uint64_t& why);
  void erase(const std::string& name, std::uint64_t& why);
  // Drops expired trajectories from the back of recency_ (at most a few per call).
  void expire(Clock::time_point now);
  void fit_total(const Trajectory& keep, Clock::time_point now);

  Limits limits_;
  std::size_t bytes_ = 0;
  Counters counters_;
  std::unordered_map<std::string, Trajectory> trajectories_;
  std::list<const std::string*> recency_;  // most recently active first
};

}  // namespace toolbridge::llm
