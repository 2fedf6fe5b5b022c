#include "telemetry/call_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>

#include "json/envelope.h"
#include "json/quote.h"

namespace toolbridge::telemetry {

namespace {

double seconds(CallLog::Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Seconds with microsecond resolution, as JSON numbers.
std::string secs(double s) {
  return fmt::format("{:.6f}", s);
}

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  const auto at = v.begin() + static_cast<std::ptrdiff_t>(std::min(k, v.size() - 1));
  std::nth_element(v.begin(), at, v.end());
  return *at;
}

// Counts a finished call of `t` by its fault class (ok is the rest of call_count).
void count_fault(CallLog::Trajectory& t, std::string_view fault) {
  if (fault == "agent") ++t.agent_faults;
  if (fault == "tool") ++t.tool_faults;
  if (fault == "infra") ++t.infra_faults;
}

// "faults":{"ok","agent","tool","infra"},"infra_failed": what a trainer masks on
// (docs/faults.md).
std::string faults_json(const CallLog::Trajectory& t) {
  const std::uint64_t failed = t.agent_faults + t.tool_faults + t.infra_faults;
  return fmt::format(R"("faults":{{"ok":{},"agent":{},"tool":{},"infra":{}}},"infra_failed":{})",
                     t.call_count - std::min(failed, t.call_count), t.agent_faults, t.tool_faults,
                     t.infra_faults, t.infra_faults > 0 ? "true" : "false");
}

// A cancelled call was given up by its caller: not an error of the tool's.
bool is_error(std::string_view outcome) {
  return outcome != "ok" && outcome != "cancelled";
}

}  // namespace

namespace {

using json::append_quoted;

template <class Int>
void append_int(std::string& out, Int v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// Seconds with microsecond resolution ("0.000123"), as a JSON number.
void append_seconds(std::string& out, double seconds) {
  const auto us = std::max<std::int64_t>(0, static_cast<std::int64_t>(seconds * 1e6 + 0.5));
  append_int(out, us / 1'000'000);
  char frac[7] = {'.', '0', '0', '0', '0', '0', '0'};
  auto rest = us % 1'000'000;
  for (int i = 6; i >= 1; --i, rest /= 10) frac[i] = static_cast<char>('0' + rest % 10);
  out.append(frac, sizeof frac);
}

}  // namespace

std::string CallRecord::json() const {
  std::string out;
  append_json(out);
  return out;
}

void CallRecord::append_json(std::string& out) const {
  // Written for every call when the trace is on: appends only, no formatting library, no
  // temporaries.
  out += R"({"seq":)";
  append_int(out, seq);
  out += R"(,"time_ms":)";
  append_int(out, time_ms);
  out += R"(,"trajectory":)";
  append_quoted(out, trajectory);
  out += R"(,"tenant":)";
  append_quoted(out, tenant);
  out += R"(,"server":)";
  append_quoted(out, server);
  out += R"(,"tool":)";
  append_quoted(out, tool);
  out += R"(,"pid":)";
  append_int(out, pid);
  out += R"(,"argument_bytes":)";
  append_int(out, argument_bytes);
  out += R"(,"result_bytes":)";
  append_int(out, result_bytes);
  out += R"(,"queue_s":)";
  append_seconds(out, queue_s);
  out += R"(,"execution_s":)";
  append_seconds(out, execution_s);
  out += R"(,"total_s":)";
  append_seconds(out, total_s);
  out += R"(,"outcome":")";
  out += outcome;  // a fixed label
  out += R"(","fault":")";
  out += fault;  // a fixed label
  out += cached ? R"(","cached":true,"repairs":)" : R"(","cached":false,"repairs":)";
  append_int(out, repairs);
  if (!traceparent.empty()) {
    out += R"(,"traceparent":)";
    append_quoted(out, traceparent);
  }
  if (!surface.empty()) {
    out += R"(,"surface":)";
    append_quoted(out, surface);
    out += R"(,"surface_fingerprint":)";
    append_quoted(out, surface_fingerprint);
  }
  out += '}';
}

std::size_t CallRecord::bytes() const {
  // A string's heap block when it has one (past the small-string buffer inside it).
  const auto heap = [](const std::string& s) {
    return s.capacity() > std::string().capacity() ? s.capacity() + 1 : 0;
  };
  return sizeof(CallRecord) + heap(trajectory) + heap(tenant) + heap(server) + heap(tool) +
         heap(traceparent) + heap(surface) + heap(surface_fingerprint);
}

namespace {
// A trajectory's own cost besides its records: the map's node with the name, the recency list's
// node, the summary.
std::size_t trajectory_overhead(const std::string& name) {
  return sizeof(std::pair<const std::string, CallLog::Trajectory>) + 64 + name.capacity();
}
}  // namespace

void CallLog::add_bytes(Trajectory& t, std::size_t n) {
  t.bytes += n;
  bytes_ += n;
}

void CallLog::remove_bytes(Trajectory& t, std::size_t n) {
  t.bytes -= n;
  bytes_ -= n;
}

std::uint32_t CallLog::server_index(std::string_view server) {
  const auto it = std::find(servers_.begin(), servers_.end(), server);
  if (it != servers_.end()) return static_cast<std::uint32_t>(it - servers_.begin());
  servers_.emplace_back(server);
  return static_cast<std::uint32_t>(servers_.size() - 1);
}

CallLog::Trajectory& CallLog::trajectory(const std::string& name, Clock::time_point now) {
  auto it = trajectories_.find(name);
  if (it == trajectories_.end()) {
    if (trajectories_.size() >= limits_.trajectories) evict_one();
    it = trajectories_.try_emplace(name).first;
    it->second.name = &it->first;
    add_bytes(it->second, trajectory_overhead(it->first));
  }
  it->second.last_activity = now;
  return it->second;
}

void CallLog::set_idle(Trajectory& t, bool idle) {
  if (t.idle == idle) return;
  t.idle = idle;
  if (!idle) {
    idle_.erase(t.recency);
    return;
  }
  idle_.push_front(t.name);
  t.recency = idle_.begin();
}

bool CallLog::evict_one() {
  // The least recently active trajectory with nothing in flight.
  if (idle_.empty()) return false;
  const auto found = trajectories_.find(*idle_.back());
  bytes_ -= found->second.bytes;
  idle_.pop_back();
  trajectories_.erase(found);
  return true;
}

CallLog::Handle CallLog::begin(const std::string& trajectory_name, std::string_view server,
                               std::string_view tool, Clock::time_point now) {
  const std::uint64_t seq = next_seq_++;
  Trajectory& t = trajectory(trajectory_name, now);
  set_idle(t, false);
  t.active.emplace_back(seq, Active{std::string(server), std::string(tool), now});
  ++active_total_;
  // Elements of an unordered_map stay put when it grows, and a trajectory with a call in flight
  // is never evicted: the pointer holds until end().
  return Handle{&t, seq};
}

CallRecord& CallLog::slot(Handle handle) {
  Trajectory& t = *handle.trajectory;
  t.appended = t.calls.size() < limits_.calls_kept;
  if (t.appended) return t.calls.emplace_back();
  if (t.calls.empty()) return scratch_;
  // The oldest record is overwritten: end() counts what replaces it.
  remove_bytes(t, t.calls[t.oldest].bytes());
  return t.calls[t.oldest];
}

void CallLog::end(Handle handle, CallRecord record, Clock::time_point now) {
  slot(handle) = std::move(record);
  end(handle, now);
}

void CallLog::end(Handle handle, Clock::time_point now) {
  Trajectory& t = *handle.trajectory;
  const CallRecord* record = &scratch_;
  if (t.appended) {
    record = &t.calls.back();
  } else if (!t.calls.empty()) {
    record = &t.calls[t.oldest];
    t.oldest = (t.oldest + 1) % t.calls.size();
  }
  t.appended = false;
  recent_.push_back(Recent{now, record->total_s, record->outcome, server_index(record->server)});
  while (recent_.size() > limits_.recent_calls) recent_.pop_front();
  t.last_activity = now;
  const auto at = std::lower_bound(t.active.begin(), t.active.end(), handle.seq,
                                   [](const auto& a, std::uint64_t seq) { return a.first < seq; });
  if (at != t.active.end() && at->first == handle.seq) {
    t.active.erase(at);
    --active_total_;
  }
  if (t.active.empty()) set_idle(t, true);
  ++t.call_count;
  if (is_error(record->outcome)) ++t.errors;
  count_fault(t, record->fault);
  t.tool_seconds += record->total_s;
  if (record != &scratch_) add_bytes(t, record->bytes());
  if (record->total_s >= t.slowest.total_s) {
    remove_bytes(t, t.slowest.bytes() - sizeof(CallRecord));
    t.slowest = *record;
    add_bytes(t, t.slowest.bytes() - sizeof(CallRecord));
  }
  // Over the byte bound: the least recently active idle trajectories go, this one last.
  while (bytes_ > limits_.max_bytes && trajectories_.size() > 1 && evict_one()) {
  }
}

std::string CallLog::trajectory_json(std::string_view id, Clock::time_point now) const {
  const auto it = trajectories_.find(std::string(id));
  if (it == trajectories_.end()) return {};
  const Trajectory& t = it->second;
  std::string out = fmt::format(
      R"({{"trajectory":{},"summary":{{"calls":{},"errors":{},"tool_seconds":{},"in_flight":{},)"
      R"("calls_kept":{},"idle_seconds":{},{})",
      json::quote(id), t.call_count, t.errors, secs(t.tool_seconds), t.active.size(),
      t.calls.size(), secs(seconds(now - t.last_activity)), faults_json(t));
  if (t.call_count > 0) out += R"(,"slowest_call":)" + t.slowest.json();
  out += R"(},"active":[)";
  bool first = true;
  for (const auto& [seq, a] : t.active) {
    if (!first) out += ',';
    first = false;
    out += fmt::format(R"({{"seq":{},"server":{},"tool":{},"running_s":{}}})", seq,
                       json::quote(a.server), json::quote(a.tool), secs(seconds(now - a.started)));
  }
  out += R"(],"calls":[)";
  first = true;
  for (std::size_t i = 0; i < t.calls.size(); ++i) {
    if (!first) out += ',';
    first = false;
    t.calls[(t.oldest + i) % t.calls.size()].append_json(out);
  }
  out += "]}";
  return out;
}

std::string CallLog::trajectories_json(Clock::time_point now, std::size_t limit) const {
  struct Row {
    const std::string* name;
    const Trajectory* t;
  };
  std::vector<Row> rows;
  rows.reserve(trajectories_.size());
  for (const auto& [name, t] : trajectories_) rows.push_back({&name, &t});
  // Busy first, then the most recently active.
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.t->active.empty() != b.t->active.empty()) return !a.t->active.empty();
    return a.t->last_activity > b.t->last_activity;
  });
  if (rows.size() > limit) rows.resize(limit);
  std::string out = fmt::format(R"({{"count":{},"in_flight":{},"trajectories":[)",
                                trajectories_.size(), active_total_);
  bool first = true;
  for (const Row& row : rows) {
    if (!first) out += ',';
    first = false;
    const Trajectory& t = *row.t;
    out +=
        fmt::format(R"({{"trajectory":{},"calls":{},"errors":{},"tool_seconds":{},"in_flight":{},)"
                    R"("idle_seconds":{},{})",
                    json::quote(*row.name), t.call_count, t.errors, secs(t.tool_seconds),
                    t.active.size(), secs(seconds(now - t.last_activity)), faults_json(t));
    if (!t.active.empty()) {
      // The current call: the one that has run longest.
      const Active& a = t.active.begin()->second;
      out +=
          fmt::format(R"(,"current":{{"server":{},"tool":{},"running_s":{}}})",
                      json::quote(a.server), json::quote(a.tool), secs(seconds(now - a.started)));
    }
    out += '}';
  }
  out += "]}";
  return out;
}

std::string CallLog::live_json(Clock::time_point now, std::chrono::seconds window,
                               std::size_t slowest) const {
  struct Figures {
    std::vector<double> totals;
    std::map<std::string_view, std::uint64_t> outcomes;
  };
  Figures all;
  std::vector<Figures> by_server(servers_.size());
  const auto since = now - window;
  for (auto it = recent_.rbegin(); it != recent_.rend() && it->at >= since; ++it) {
    for (Figures* f : {&all, &by_server[it->server]}) {
      f->totals.push_back(it->total_s);
      ++f->outcomes[it->outcome];
    }
  }
  const double span = static_cast<double>(window.count());
  auto render = [&](Figures& f) {
    std::string o = fmt::format(R"({{"calls":{},"calls_per_s":{:.3f},"p50_s":{},"p99_s":{},)",
                                f.totals.size(), static_cast<double>(f.totals.size()) / span,
                                secs(percentile(f.totals, 0.5)), secs(percentile(f.totals, 0.99)));
    o += R"("outcomes":{)";
    bool first = true;
    for (const auto& [outcome, n] : f.outcomes) {
      if (!first) o += ',';
      first = false;
      o += fmt::format("{}:{}", json::quote(outcome), n);
    }
    return o + "}}";
  };
  std::string out =
      fmt::format(R"({{"window_s":{},"all":{},"servers":{{)", window.count(), render(all));
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    if (i > 0) out += ',';
    out += json::quote(servers_[i]) + ":" + render(by_server[i]);
  }
  // The longest-running calls in flight.
  struct Running {
    const std::string* trajectory;
    std::uint64_t seq;
    const Active* a;
  };
  std::vector<Running> running;
  for (const auto& [name, t] : trajectories_)
    for (const auto& [seq, a] : t.active) running.push_back({&name, seq, &a});
  const std::size_t n = std::min(slowest, running.size());
  std::partial_sort(running.begin(), running.begin() + static_cast<std::ptrdiff_t>(n),
                    running.end(),
                    [](const Running& x, const Running& y) { return x.a->started < y.a->started; });
  out += fmt::format(R"(}},"in_flight":{},"trajectories":{},"slowest_active":[)", active_total_,
                     trajectories_.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out += ',';
    const Running& r = running[i];
    out += fmt::format(R"({{"trajectory":{},"seq":{},"server":{},"tool":{},"running_s":{}}})",
                       json::quote(*r.trajectory), r.seq, json::quote(r.a->server),
                       json::quote(r.a->tool), secs(seconds(now - r.a->started)));
  }
  out += "]}";
  return out;
}

}  // namespace toolbridge::telemetry
