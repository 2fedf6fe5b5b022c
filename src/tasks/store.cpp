#include "tasks/store.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>

#include "transport/session_id.h"

namespace toolbridge::tasks {

std::string_view to_string(Status s) {
  switch (s) {
    case Status::kWorking:
      return "working";
    case Status::kInputRequired:
      return "input_required";
    case Status::kCompleted:
      return "completed";
    case Status::kFailed:
      return "failed";
    case Status::kCancelled:
      return "cancelled";
  }
  return "working";
}

bool is_terminal(Status s) {
  return s == Status::kCompleted || s == Status::kFailed || s == Status::kCancelled;
}

std::string iso8601(base::Clock::wall_time_point t) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

Store::Store(Limits limits, const base::Clock& clock) : limits_(limits), clock_(clock) {}

// Runs are not cancelled here: at shutdown the servers stop with their calls anyway.
Store::~Store() = default;

std::size_t Store::running() const {
  std::size_t n = 0;
  for (const auto& [id, task] : tasks_) n += is_terminal(task.status) ? 0 : 1;
  return n;
}

void Store::erase(std::map<std::string, Task, std::less<>>::iterator it, const std::string& why) {
  std::shared_ptr<Run> run = std::move(it->second.run);
  bytes_ -= it->second.bytes();
  if (auto o = per_owner_.find(it->second.owner); o != per_owner_.end() && --o->second == 0)
    per_owner_.erase(o);
  tasks_.erase(it);
  if (run) run->cancel(why);
}

void Store::purge() {
  const auto now = clock_.now();
  // A sweep at most once a second: each task is also checked when it is looked up.
  if (now < next_purge_) return;
  next_purge_ = now + std::chrono::seconds(1);
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    auto next = std::next(it);
    if (it->second.expires <= now) erase(it, "the task expired (gateway.task_ttl)");
    it = next;
  }
}

base::Status Store::room_for(std::string_view owner) {
  purge();
  auto n = per_owner_.find(owner);
  if (n == per_owner_.end() || n->second < limits_.max_per_owner) return {};
  for (const auto& [id, task] : tasks_) {
    if (task.owner == owner && is_terminal(task.status)) return {};  // it would give way
  }
  return base::fail(fmt::format(
      "too many tasks: this tenant has {} running (gateway.task_max_per_tenant); wait for one to "
      "finish or cancel one with tasks/cancel",
      n->second));
}

base::Expected<Task*> Store::create(const std::string& owner, std::shared_ptr<Run> run) {
  purge();
  if (per_owner_[owner] >= limits_.max_per_owner) {
    auto oldest = tasks_.end();
    for (auto it = tasks_.begin(); it != tasks_.end(); ++it) {
      if (it->second.owner != owner || !is_terminal(it->second.status)) continue;
      if (oldest == tasks_.end() || it->second.created < oldest->second.created) oldest = it;
    }
    if (oldest == tasks_.end()) {
      return base::fail(fmt::format(
          "too many tasks: this tenant has {} running (gateway.task_max_per_tenant); wait for "
          "one to finish or cancel one with tasks/cancel",
          per_owner_[owner]));
    }
    erase(oldest, "");
  }
  std::string id = transport::random_session_id();
  Task task;
  task.id = id;
  task.owner = owner;
  task.created = task.updated = clock_.wall_now();
  task.expires = clock_.now() + limits_.ttl;
  task.run = std::move(run);
  ++per_owner_[owner];
  return &tasks_.emplace(std::move(id), std::move(task)).first->second;
}

Task* Store::live(std::string_view id) {
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return nullptr;
  if (it->second.expires <= clock_.now()) {
    erase(it, "the task expired (gateway.task_ttl)");
    return nullptr;
  }
  return &it->second;
}

Task* Store::find(std::string_view id, std::string_view owner) {
  purge();
  Task* t = live(id);
  return t && t->owner == owner ? t : nullptr;
}

void Store::input_required(std::string_view id, std::string requests) {
  Task* t = live(id);
  if (!t || is_terminal(t->status)) return;
  bytes_ -= t->input_requests.size();
  t->input_requests = std::move(requests);
  bytes_ += t->input_requests.size();
  t->status = Status::kInputRequired;
  t->updated = clock_.wall_now();
  if (on_change) on_change(*t);
}

void Store::working(std::string_view id) {
  Task* t = live(id);
  if (!t || is_terminal(t->status) || t->status == Status::kWorking) return;
  bytes_ -= t->input_requests.size();
  t->input_requests.clear();
  t->status = Status::kWorking;
  t->updated = clock_.wall_now();
  if (on_change) on_change(*t);
}

bool Store::make_room(std::size_t need, std::string_view keep) {
  while (bytes_ + need > limits_.max_bytes) {
    auto oldest = tasks_.end();
    for (auto it = tasks_.begin(); it != tasks_.end(); ++it) {
      if (it->first == keep || !is_terminal(it->second.status) || it->second.bytes() == 0) continue;
      if (oldest == tasks_.end() || it->second.created < oldest->second.created) oldest = it;
    }
    if (oldest == tasks_.end()) return false;
    erase(oldest, "");
  }
  return true;
}

void Store::finish(Task& t, Status status, std::string result, std::string error) {
  bytes_ -= t.bytes();
  t.input_requests.clear();
  t.result.clear();
  t.error.clear();
  const std::size_t need = result.size() + error.size();
  if (need > limits_.max_bytes || !make_room(need, t.id)) {
    status = Status::kFailed;
    result.clear();
    error = fmt::format(
        R"j({{"code":-32603,"message":"the task's result ({} bytes) does not fit in the bytes )j"
        R"j(tasks may keep (gateway.task_max_bytes = {})"}})j",
        need, limits_.max_bytes);
  }
  t.status = status;
  t.result = std::move(result);
  t.error = std::move(error);
  bytes_ += t.bytes();
  t.status_message.clear();
  t.updated = clock_.wall_now();
  t.run.reset();
  if (on_change) on_change(t);
}

void Store::complete(std::string_view id, std::string result) {
  Task* t = live(id);
  if (t && !is_terminal(t->status)) finish(*t, Status::kCompleted, std::move(result), {});
}

void Store::fail(std::string_view id, std::string error) {
  Task* t = live(id);
  if (t && !is_terminal(t->status)) finish(*t, Status::kFailed, {}, std::move(error));
}

void Store::provide(Task& task, const boost::json::object& responses) {
  if (task.status != Status::kInputRequired || !task.run) return;
  const std::string id = task.id;
  std::string pending = task.run->provide(responses);
  if (pending.empty() || pending == "{}") {
    working(id);
  } else {
    input_required(id, std::move(pending));
  }
}

void Store::cancel(Task& task, const std::string& why) {
  if (is_terminal(task.status)) return;
  std::shared_ptr<Run> run = std::move(task.run);
  finish(task, Status::kCancelled, {}, {});
  if (run) run->cancel(why);
}

}  // namespace toolbridge::tasks

namespace toolbridge::tasks {

void Store::cancel_running(const std::string& why) {
  for (auto& [id, task] : tasks_) cancel(task, why);
}

void Store::progress(std::string_view id, std::string message) {
  Task* t = live(id);
  if (!t || is_terminal(t->status)) return;
  if (message.size() > kMaxStatusMessage) {
    // Cut at a character boundary (a UTF-8 continuation byte is 10xxxxxx).
    std::size_t n = kMaxStatusMessage;
    while (n > 0 && (static_cast<unsigned char>(message[n]) & 0xC0) == 0x80) --n;
    message.resize(n);
  }
  t->status_message = std::move(message);
}

std::vector<const Task*> Store::of_owner(std::string_view owner) {
  purge();
  std::vector<const Task*> out;
  for (const auto& [id, task] : tasks_) {
    if (task.owner == owner && task.expires > clock_.now()) out.push_back(&task);
  }
  std::sort(out.begin(), out.end(),
            [](const Task* a, const Task* b) { return a->created < b->created; });
  return out;
}

}  // namespace toolbridge::tasks
