#pragma once
// What the operator sees of the calls in memory: each trajectory's recent calls in order with a
// summary, the calls in flight (which trajectory is stuck on what, for how long), and the last
// minute of calls for rates and percentiles. Bounded in trajectories, calls kept per trajectory,
// recent calls and bytes in all (a long rollout names more trajectories than any count fits):
// trajectory names come from callers.
#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"

namespace toolbridge::telemetry {

// One finished call, as the trace and the trajectory view show it.
struct CallRecord {
  std::uint64_t seq = 0;     // order of arrival at the gateway
  std::int64_t time_ms = 0;  // wall clock when the call arrived (ms since the Unix epoch)
  std::string trajectory;
  std::string tenant;
  std::string server;
  std::string tool;  // the exposed tool name, or the method (prompts/get, ...)
  int pid = 0;       // the instance that answered (0: none, or a remote server)
  std::size_t argument_bytes = 0;
  std::size_t result_bytes = 0;
  double queue_s = 0;      // arrival -> handed to an instance (admission, instance start)
  double execution_s = 0;  // handed to an instance -> answer
  double total_s = 0;
  std::string_view outcome;  // outcome_label(): ok, tool_error, error, timeout, crashed, ...
  // Whose fault (docs/faults.md): ok, agent, tool or infra; a static label.
  std::string_view fault = "ok";
  bool cached = false;       // answered from the result cache
  std::size_t repairs = 0;   // changes repair made to the call
  std::string traceparent;   // the caller's W3C trace context, empty if none
  // The tool surface the call was made through and its fingerprint (docs/surfaces.md); empty if
  // none.
  std::string surface;
  std::string surface_fingerprint;

  // The record as one JSON object (a trace line, an entry of the trajectory view).
  std::string json() const;
  void append_json(std::string& out) const;
  // What the record holds in memory: itself and its strings' heap blocks.
  std::size_t bytes() const;
};

class CallLog {
 public:
  using Clock = base::Clock;
  struct Limits {
    std::size_t trajectories = 4096;    // the least recently active idle one goes first
    std::size_t calls_kept = 256;       // per trajectory; the summary counts all of them
    std::size_t recent_calls = 65'536;  // for rates and percentiles of the last minute
    // Trajectories' records and summaries in all (gateway.call_log_max_bytes): over it the
    // least recently active idle trajectories go first.
    std::size_t max_bytes = 16u << 20;
  };
  CallLog() : CallLog(Limits{}) {}
  explicit CallLog(Limits limits) : limits_(limits) {}

  // What the log keeps of one trajectory (opaque to callers).
  struct Active {
    std::string server, tool;
    Clock::time_point started;
  };
  struct Trajectory {
    // The last calls_kept, in order of their end from `oldest` on, wrapping around: a ring, so
    // a call's end allocates nothing once it is full (a deque of records this size allocated a
    // block every second call and freed one every second call).
    std::vector<CallRecord> calls;
    std::size_t oldest = 0;
    // In flight, by seq (which only grows, so an append keeps the order): a vector that keeps its
    // capacity, where a map allocated a node per call.
    std::vector<std::pair<std::uint64_t, Active>> active;
    std::uint64_t call_count = 0, errors = 0;
    // Calls by fault class: agent, tool, infra (the rest are ok).
    std::uint64_t agent_faults = 0, tool_faults = 0, infra_faults = 0;
    double tool_seconds = 0;
    CallRecord slowest;
    bool appended = false;  // slot() added a record to `calls` (not yet full) for end()
    std::size_t bytes = 0;  // what the trajectory holds (CallRecord::bytes() of its records, ...)
    Clock::time_point last_activity;
    // Its place in CallLog::idle_ while it has no call in flight (`idle` says it has one).
    std::list<const std::string*>::iterator recency;
    bool idle = false;
    const std::string* name = nullptr;  // its key in CallLog::trajectories_ (keys stay put)
  };
  // A call in flight: its trajectory (kept while the call runs) and its seq.
  struct Handle {
    Trajectory* trajectory;
    std::uint64_t seq;
  };
  // A call starts: it is listed among the active calls until end().
  Handle begin(const std::string& trajectory, std::string_view server, std::string_view tool,
               Clock::time_point now);
  // The record the call of `handle` is kept as, to fill in place and then end(handle, now),
  // with no suspension in between: once a trajectory's ring is full its strings keep the
  // capacity of the record they replace, so a call's record allocates nothing.
  CallRecord& slot(Handle handle);
  // The call's record (filled through slot()) is kept and counted; `seq` is the handle's.
  void end(Handle handle, Clock::time_point now);
  // The same with a record made elsewhere.
  void end(Handle handle, CallRecord record, Clock::time_point now);

  // GET /v1/trajectories/{id}: the calls kept, in order, and a summary; empty if unknown.
  std::string trajectory_json(std::string_view id, Clock::time_point now) const;
  // GET /v1/trajectories: the trajectories with calls in flight (each with its current call and
  // how long it has run), then the most recently active others, at most `limit` in all.
  std::string trajectories_json(Clock::time_point now, std::size_t limit) const;
  // The dashboard's call figures: calls/s, p50/p99 and outcomes over `window` (overall and per
  // server), and the `slowest` longest-running calls in flight.
  std::string live_json(Clock::time_point now, std::chrono::seconds window,
                        std::size_t slowest) const;

  std::size_t trajectory_count() const { return trajectories_.size(); }
  // What the trajectories hold in all (bounded by Limits::max_bytes).
  std::size_t bytes() const { return bytes_; }
  std::size_t active_count() const { return active_total_; }

 private:
  struct Recent {
    Clock::time_point at;
    double total_s;
    std::string_view outcome;  // points at a static label
    std::uint32_t server;      // index into servers_
  };
  Trajectory& trajectory(const std::string& name, Clock::time_point now);
  // Evicts the least recently active idle trajectory; false if every one has calls in flight.
  bool evict_one();
  // A trajectory joins idle_ (at the front) when its last call in flight ends and leaves it when
  // a call begins.
  void set_idle(Trajectory& t, bool idle);
  void add_bytes(Trajectory& t, std::size_t n);
  void remove_bytes(Trajectory& t, std::size_t n);
  std::uint32_t server_index(std::string_view server);

  Limits limits_;
  std::uint64_t next_seq_ = 1;
  std::size_t active_total_ = 0;
  std::size_t bytes_ = 0;
  std::unordered_map<std::string, Trajectory> trajectories_;
  // The names (keys of trajectories_) of the trajectories with no call in flight, most recently
  // active first: eviction takes the back one, with no scan (a framework that opens a session
  // per call makes a new trajectory per call, and thousands of trajectories with calls in flight
  // must not be stepped over one by one on every call).
  std::list<const std::string*> idle_;
  std::deque<Recent> recent_;
  std::vector<std::string> servers_;  // names seen (bounded by the configured servers)
  CallRecord scratch_;                // the slot of a call when no record is kept (calls_kept 0)
};

}  // namespace toolbridge::telemetry
