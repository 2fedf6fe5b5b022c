#pragma once
// The tasks a gateway keeps for the MCP tasks extension (docs/tasks.md): a tools/call started as
// a task runs in the background and its state and result stay here, reachable by an unguessable
// id and only by the owner (tenant) that started it. In memory, bounded in count per owner, in
// result bytes for all owners together, and in time (each task lives `ttl` after its creation).
#include <boost/json/object.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"

namespace toolbridge::tasks {

enum class Status { kWorking, kInputRequired, kCompleted, kFailed, kCancelled };
std::string_view to_string(Status s);
bool is_terminal(Status s);

// The running side of a task (the call in the gateway's pipeline), as the store sees it.
class Run {
 public:
  virtual ~Run() = default;
  // Stops the call upstream (the store has already marked the task cancelled).
  virtual void cancel(const std::string& why) = 0;
  // Answers the input requests whose keys `responses` holds; returns the inputRequests map of
  // those still waiting ("{}" or empty if none).
  virtual std::string provide(const boost::json::object& responses) = 0;
};

struct Task {
  std::string id;
  std::string owner;
  Status status = Status::kWorking;
  base::Clock::wall_time_point created, updated;
  base::Clock::time_point expires;
  std::string result;          // completed: the tool's result object (raw JSON)
  std::string error;           // failed: a JSON-RPC error object (raw JSON)
  std::string input_requests;  // input_required: the inputRequests map (raw JSON)
  // What the call last said of its progress (its latest notifications/progress), shown as the
  // task's statusMessage while it runs; at most kMaxStatusMessage bytes.
  std::string status_message;
  std::shared_ptr<Run> run;  // until terminal
  std::size_t bytes() const { return result.size() + error.size() + input_requests.size(); }
};

inline constexpr std::size_t kMaxStatusMessage = 512;

struct Limits {
  std::chrono::milliseconds ttl{60 * 60'000};
  std::size_t max_per_owner = 256;
  std::size_t max_bytes = 256u << 20;
};

class Store {
 public:
  Store(Limits limits, const base::Clock& clock);
  ~Store();

  // A new working task of `owner` (never null), or why not: the owner holds max_per_owner tasks
  // that are all still running (finished ones give way, oldest first).
  base::Expected<Task*> create(const std::string& owner, std::shared_ptr<Run> run);
  // Whether create() for `owner` would succeed now, else create()'s error (for a caller that
  // must not start anything it could not keep, such as a server's own task).
  base::Status room_for(std::string_view owner);
  // The task `id` if it exists, has not expired and belongs to `owner`; nullptr otherwise (a
  // task of another owner is not told apart from a missing one).
  Task* find(std::string_view id, std::string_view owner);
  // The task `id` whoever owns it (for the gateway's own follower of the call), or nullptr.
  Task* by_id(std::string_view id) { return live(id); }

  // State changes of a task that is not terminal (a terminal task ignores them: a cancelled
  // call's late result changes nothing).
  void input_required(std::string_view id, std::string requests);
  void working(std::string_view id);
  void complete(std::string_view id, std::string result);
  void fail(std::string_view id, std::string error);
  // tasks/update: delivers inputResponses to the run; the task stays input_required while any
  // request is unanswered (only those listed), else it is working again.
  void provide(Task& task, const boost::json::object& responses);
  // Marks the task cancelled and cancels its run; idempotent on a terminal task.
  void cancel(Task& task, const std::string& why);
  // Cancels every running task (the gateway is stopping: their calls would die with it, and a
  // stop need not wait shutdown_grace for calls nobody waits for).
  void cancel_running(const std::string& why);
  // The task's statusMessage while it works (cut to kMaxStatusMessage bytes; a terminal task
  // ignores it).
  void progress(std::string_view id, std::string message);
  // The tasks of `owner`, oldest first (tasks/list of the 2025-11-25 revision).
  std::vector<const Task*> of_owner(std::string_view owner);

  // Called after every change of a task's status (status notifications, tasks/result waiters).
  std::function<void(const Task&)> on_change;

  std::size_t size() const { return tasks_.size(); }
  std::size_t bytes() const { return bytes_; }
  std::size_t running() const;
  const Limits& limits() const { return limits_; }
  // Drops expired tasks (cancelling the running ones); called by every create and find, sweeps
  // at most once a second.
  void purge();

 private:
  Task* live(std::string_view id);
  // Ends the task: it keeps `result`/`error` within the byte budget, or fails saying why not.
  void finish(Task& task, Status status, std::string result, std::string error);
  void erase(std::map<std::string, Task, std::less<>>::iterator it, const std::string& why);
  // Frees room for `need` more bytes by dropping the oldest terminal tasks; false if it cannot.
  bool make_room(std::size_t need, std::string_view keep);

  Limits limits_;
  const base::Clock& clock_;
  std::map<std::string, Task, std::less<>> tasks_;
  std::map<std::string, std::size_t, std::less<>> per_owner_;
  std::size_t bytes_ = 0;
  base::Clock::time_point next_purge_{};
};

// An ISO-8601 UTC timestamp with milliseconds ("2026-11-27T16:35:00.123Z").
std::string iso8601(base::Clock::wall_time_point t);

}  // namespace toolbridge::tasks
