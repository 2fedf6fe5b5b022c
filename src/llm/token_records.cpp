#include "llm/token_records.h"

#include <algorithm>

namespace toolbridge::llm {

namespace {

constexpr std::size_t kExpiredPerCall = 8;  // aged-out trajectories dropped per add()
// A record's fixed part and a trajectory's, besides their heap blocks.
constexpr std::size_t kTrajectoryOverhead = sizeof(TokenRecords::Trajectory) + 64;

template <class V>
std::size_t heap(const V& v) {
  return v.capacity() * sizeof(typename V::value_type);
}

std::size_t heap_string(const std::string& s) {
  return s.capacity() > 15 ? s.capacity() + 1 : 0;
}

}  // namespace

std::size_t TokenRecord::bytes() const {
  return sizeof(TokenRecord) + heap_string(model) + heap_string(worker) + heap_string(endpoint) +
         heap_string(messages_hash) + heap_string(tokens.finish_reason) + heap(tokens.prompt_ids) +
         heap(tokens.completion_ids) + heap(tokens.completion_logprobs);
}

std::size_t TokenRecords::max_values() const {
  // Ids and logprobs take 4 bytes each; leave room for the record's own fields.
  const std::size_t room = std::min(limits_.trajectory_max_bytes, limits_.max_bytes);
  return room > 1024 ? (room - 1024) / 4 : 0;
}

bool TokenRecords::is_released(const Trajectory& t, Clock::time_point now) const {
  return t.released || now - t.last_activity >= limits_.idle_ttl;
}

TokenRecords::Clock::time_point TokenRecords::expires_at(const Trajectory& t) const {
  const auto released = t.released ? t.released_at : t.last_activity + limits_.idle_ttl;
  return released + limits_.ttl;
}

void TokenRecords::add(const std::string& trajectory, TokenRecord record, Clock::time_point now) {
  expire(now);
  auto [it, fresh] = trajectories_.try_emplace(trajectory);
  Trajectory& t = it->second;
  if (fresh) {
    recency_.push_front(&it->first);
    t.recency = recency_.begin();
    t.bytes = kTrajectoryOverhead + trajectory.size();
    bytes_ += t.bytes;
  } else {
    recency_.splice(recency_.begin(), recency_, t.recency);
  }
  t.last_activity = now;
  t.released = false;  // a call after a release starts it again
  record.tokens.prompt_ids.shrink_to_fit();
  record.tokens.completion_ids.shrink_to_fit();
  record.tokens.completion_logprobs.shrink_to_fit();
  record.turn = t.next_turn++;
  const std::size_t n = record.bytes();
  t.records.push_back(std::move(record));
  t.bytes += n;
  bytes_ += n;
  ++counters_.kept;
  while (t.records.size() > std::max<std::size_t>(limits_.max_turns, 1))
    drop_front(t, counters_.dropped_turns);
  while (t.records.size() > 1 && t.bytes > limits_.trajectory_max_bytes)
    drop_front(t, counters_.dropped_trajectory_bytes);
  fit_total(t, now);
}

void TokenRecords::drop_front(Trajectory& t, std::uint64_t& why) {
  const std::size_t n = t.records.front().bytes();
  t.records.pop_front();
  t.bytes -= n;
  bytes_ -= n;
  ++t.turns_dropped;
  ++why;
}

void TokenRecords::erase(const std::string& name, std::uint64_t& why) {
  auto it = trajectories_.find(name);
  if (it == trajectories_.end()) return;
  why += it->second.records.size();
  bytes_ -= it->second.bytes;
  recency_.erase(it->second.recency);
  trajectories_.erase(it);
}

void TokenRecords::expire(Clock::time_point now) {
  for (std::size_t i = 0; i < kExpiredPerCall && !recency_.empty(); ++i) {
    const std::string& name = *recency_.back();
    const Trajectory& t = trajectories_.at(name);
    if (now < expires_at(t)) return;
    erase(std::string(name), counters_.dropped_expired);
  }
}

void TokenRecords::fit_total(const Trajectory& keep, Clock::time_point now) {
  while (bytes_ > limits_.max_bytes) {
    // The least recently active released trajectory goes whole.
    const std::string* victim = nullptr;
    for (auto it = recency_.rbegin(); it != recency_.rend(); ++it) {
      const Trajectory& t = trajectories_.at(**it);
      if (&t != &keep && is_released(t, now)) {
        victim = *it;
        break;
      }
    }
    if (victim) {
      erase(std::string(*victim), counters_.dropped_max_bytes);
      continue;
    }
    // None released: the least recently active trajectory's oldest turns (this one's last
    // record stays).
    Trajectory& oldest = trajectories_.at(*recency_.back());
    if (&oldest != &keep && oldest.records.empty()) {
      std::uint64_t none = 0;
      erase(std::string(*recency_.back()), none);
      continue;
    }
    if (oldest.records.size() <= (&oldest == &keep ? 1u : 0u)) return;
    drop_front(oldest, counters_.dropped_max_bytes);
  }
}

void TokenRecords::release(const std::string& trajectory, Clock::time_point now) {
  auto it = trajectories_.find(trajectory);
  if (it == trajectories_.end() || it->second.released) return;
  it->second.released = true;
  it->second.released_at = now;
}

const TokenRecords::Trajectory* TokenRecords::find(std::string_view trajectory,
                                                   Clock::time_point now) {
  auto it = trajectories_.find(std::string(trajectory));
  if (it == trajectories_.end()) return nullptr;
  if (now >= expires_at(it->second)) {
    erase(it->first, counters_.dropped_expired);
    return nullptr;
  }
  return &it->second;
}

}  // namespace toolbridge::llm
