#include "replay/replay_stage.h"

#include <fmt/format.h>

#include <boost/json/serialize.hpp>

#include "cache/canonical.h"
#include "json/envelope.h"
#include "replay/record_format.h"
#include "upstream/upstream.h"

namespace toolbridge::replay {

using call::Call;
using call::Fault;
using call::Result;

namespace {

constexpr std::string_view kReplayedMetric = "toolbridge_replayed_calls_total";
constexpr std::size_t kArgumentsShown = 200;

std::string shown(std::string_view arguments) {
  if (arguments.size() <= kArgumentsShown) return std::string(arguments);
  return std::string(arguments.substr(0, kArgumentsShown)) + "...";
}

// The arguments as the server gets them (after repair), "{}" if none.
std::string_view arguments_of(Call& call) {
  if (!call.arguments_rewritten) {
    const std::string_view written = call.member("arguments");
    return written.empty() ? std::string_view("{}") : written;
  }
  const std::string& params = call.server_params();
  if (const auto members = json::object_members(params)) {
    for (const auto& m : *members)
      if (m.name == "arguments") return m.value.in(params);
  }
  return "{}";
}

double ms_between(base::Clock::time_point from, base::Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

ReplayStage::ReplayStage(const config::Config& config, const Cassette* cassette,
                         Recorder* recorder, telemetry::Metrics& metrics,
                         const base::Clock& clock)
    : config_(config),
      cassette_(cassette),
      recorder_(recorder),
      strict_(config.gateway.replay.mode == config::ReplayMode::kStrict),
      metrics_(metrics),
      clock_(clock) {
  metrics_.describe(std::string(kReplayedMetric), "counter",
                    "Tool calls under gateway.replay, by result (hit: answered from the "
                    "cassette; miss: not in it, refused in strict mode; live: not in it, run on "
                    "the server in fallthrough mode).");
}

void ReplayStage::count(std::uint64_t*& cell, std::string_view result) {
  // Looked up at the first call of each result, then bumped in place (no label rendering).
  if (!cell)
    cell = &metrics_.counter_cell(std::string(kReplayedMetric),
                                  telemetry::labels({{"result", result}}));
  ++*cell;
}

const ReplayStage::Tape& ReplayStage::tape_trajectory(const std::string& name, std::uint64_t hash) {
  // Two names with one hash (one chance in 2^64) take the next free key.
  for (;; ++hash) {
    const auto it = mapped_.find(hash);
    if (it == mapped_.end()) break;
    if (it->second.name == name) return it->second;
  }
  std::string tape = name;
  if (!cassette_->has_trajectory(name)) {
    const auto& order = cassette_->trajectories();
    while (next_unclaimed_ < order.size() && claimed_.contains(order[next_unclaimed_]))
      ++next_unclaimed_;
    if (next_unclaimed_ < order.size()) tape = order[next_unclaimed_++];
  }
  claimed_.insert(tape);
  const std::uint64_t tape_hash = KeyHash::name(tape);
  return mapped_.emplace(hash, Tape{name, std::move(tape), tape_hash}).first->second;
}

boost::asio::awaitable<Result> ReplayStage::handle(Call& call, call::Next next) {
  // Not a coroutine: a replayed call costs no frame of its own (as a cache hit).
  const std::string_view raw = arguments_of(call);
  arguments_.clear();
  if (!cache::append_canonical_json(arguments_, raw)) arguments_.assign(raw);
  const std::string& arguments = arguments_;
  // The call's bytes are hashed once, for its occurrence count and the cassette's index.
  const std::uint64_t parts = KeyHash::call(call.route.server, call.route.tool, arguments);
  const std::uint64_t name = KeyHash::name(call.trajectory);
  const std::uint64_t own = KeyHash::in_trajectory(parts, name);
  const std::uint64_t occurrence = seen_.next(own);
  if (cassette_) {
    const Tape& mapping = tape_trajectory(call.trajectory, name);
    const std::string& tape = mapping.tape;
    const std::uint64_t in_tape =
        mapping.tape_hash == name ? own : KeyHash::in_trajectory(parts, mapping.tape_hash);
    if (const CallRecord* rec =
            cassette_->find(KeyHash::of(in_tape, occurrence), tape, call.route.server,
                            call.route.tool, arguments, occurrence)) {
      count(hits_, "hit");
      if (recorder_) record_replayed(call, *rec);
      return call::ready(replayed(call, *rec));
    }
    if (strict_) {
      count(misses_, "miss");
      return call::ready(miss(call, tape, arguments, occurrence));
    }
    count(lives_, "live");
  }
  return live(call, next, arguments, occurrence);
}

boost::asio::awaitable<Result> ReplayStage::live(Call& call, call::Next next, std::string arguments,
                                                 std::uint64_t occurrence) {
  Result result = co_await next(call);
  if (recorder_ && result.answered_by_server()) record(call, arguments, occurrence, result);
  co_return result;
}

Result ReplayStage::replayed(const Call& call, const CallRecord& rec) {
  // The answer after the id was made when the cassette was read: one allocation, no scan.
  constexpr std::string_view kHead = R"({"jsonrpc":"2.0","id":)";
  Result r;
  r.response.reserve(kHead.size() + call.id.size() + rec.answer_tail.size());
  r.response.append(kHead).append(call.id).append(rec.answer_tail);
  if (rec.error) {
    r.fault = Fault::kServerError;
    if (const auto members = json::object_members(rec.payload)) {
      for (const auto& m : *members) {
        if (m.name != "message") continue;
        const std::string_view v = m.value.in(rec.payload);
        if (v.size() >= 2 && v.front() == '"') r.why = std::string(v.substr(1, v.size() - 2));
      }
    }
    return r;
  }
  r.fault = rec.tool_error ? Fault::kToolError : Fault::kNone;
  const std::size_t at = kHead.size() + call.id.size() + rec.value_offset;
  r.result_at = {at, rec.answer_tail.size() - rec.value_offset - 1};
  return r;
}

Result ReplayStage::miss(const Call& call, const std::string& trajectory,
                         std::string_view arguments, std::uint64_t occurrence) {
  std::string why = fmt::format(
      "replay (strict): the cassette {} holds no call {} with arguments {} as call {} with "
      "these arguments in trajectory '{}'",
      cassette_->dir(), call.route.display_name, shown(arguments), occurrence, trajectory);
  if (const CallRecord* near =
          cassette_->nearest(trajectory, call.route.server, call.route.tool, arguments)) {
    why += fmt::format(
        "; the nearest recorded call: {}{}{} with arguments {}, call {} in trajectory '{}' "
        "(record {})",
        near->server, config_.gateway.separator, near->tool, shown(near->arguments),
        near->occurrence, near->trajectory, near->seq);
  } else {
    why += "; the cassette holds no call at all";
  }
  return Result::failure(Fault::kUnavailable, std::move(why));
}

const std::string& ReplayStage::server_fingerprint(const Call& call) {
  const upstream::Upstream& up = *call.route.upstream;
  const upstream::Catalog* lists = up.catalog();
  auto& [seen_lists, hash] = fingerprints_[call.route.server];
  if (lists && lists == seen_lists && !hash.empty()) return hash;
  seen_lists = lists;
  const std::string tools = lists ? boost::json::serialize(lists->tools) : std::string("[]");
  const auto instance = up.any_ready();
  hash = recorder_->fingerprint(ServerEntry{
      call.route.server, instance ? std::string_view(instance->info_name()) : "",
      instance ? std::string_view(instance->info_version()) : "", tools});
  return hash;
}

void ReplayStage::record(Call& call, std::string_view arguments, std::uint64_t occurrence,
                         const Result& result) {
  if (!call.route.upstream || !call.route.upstream->config().records(call.route.tool)) return;
  // The result where the upstream's scan found it, else the response read again.
  std::string_view answer = call::known_result(result);
  bool error = false;
  if (answer.empty()) {
    const json::Envelope env = json::parse_envelope(result.response);
    if (env.kind != json::Kind::kResponse) return;
    error = env.result.empty();
    answer = error ? env.error.in(result.response) : env.result.in(result.response);
  }
  if (answer.empty()) return;
  const std::string& fingerprint = server_fingerprint(call);
  const auto now = clock_.now();
  recorder_->record(CallEntry{
      call.trajectory, call.route.server, call.route.tool, arguments, occurrence, error, answer,
      std::chrono::duration_cast<std::chrono::milliseconds>(
          clock_.wall_time(call.started).time_since_epoch())
          .count(),
      call.sent == base::Clock::time_point{} ? 0.0 : ms_between(call.started, call.sent),
      ms_between(call.started, now), fingerprint});
}

void ReplayStage::record_replayed(const Call& call, const CallRecord& rec) {
  if (!call.route.upstream || !call.route.upstream->config().records(call.route.tool)) return;
  std::string_view fingerprint = rec.fingerprint;
  if (auto s = cassette_->servers().find(rec.server); s != cassette_->servers().end()) {
    // The replayed server's record goes into the new run once (its lists do not change).
    auto& [seen_lists, hash] = fingerprints_[rec.server];
    if (seen_lists != &s->second.lists || hash.empty()) {
      seen_lists = &s->second.lists;
      const std::string tools = boost::json::serialize(s->second.lists.tools);
      hash = recorder_->fingerprint(
          ServerEntry{s->second.server, s->second.name, s->second.version, tools});
    }
    fingerprint = hash;
  }
  recorder_->record(CallEntry{
      call.trajectory, rec.server, rec.tool, rec.arguments, rec.occurrence, rec.error,
      rec.payload,
      std::chrono::duration_cast<std::chrono::milliseconds>(
          clock_.wall_time(call.started).time_since_epoch())
          .count(),
      0.0, rec.duration_ms, fingerprint});
}

}  // namespace toolbridge::replay
