#include "idempotency/ledger.h"

namespace toolbridge::idempotency {

using call::Fault;

namespace {
// What an entry holds besides its strings: the entry, its map node, its list node.
constexpr std::size_t kEntryOverhead = sizeof(Ledger::Entry) + 128;

std::size_t bytes_of(const std::string& scope, const Ledger::Entry& e) {
  std::size_t n = kEntryOverhead + 2 * scope.size() + e.tool.size() + e.arguments.size();
  if (e.result) n += e.result->response.size() + e.result->why.size();
  return n;
}
}  // namespace

bool Ledger::may_have_run(Fault fault) {
  switch (fault) {
    case Fault::kNotSent:
    case Fault::kShed:
    case Fault::kUnavailable:
    case Fault::kOverloaded:
    case Fault::kShuttingDown:
    case Fault::kCancelled:
      return false;
    default:
      return true;
  }
}

Ledger::Found Ledger::claim(const std::string& scope, std::string_view tool,
                            std::string_view arguments, Clock::time_point now) {
  trim(now);
  if (auto it = entries_.find(scope); it != entries_.end()) {
    const auto& e = it->second.entry;
    if (e->tool != tool || e->arguments != arguments) return {Claim::kMismatch, e};
    return {e->done ? Claim::kDone : Claim::kRunning, e};
  }
  // Room for a new key: the least recently finished entry goes.
  while (entries_.size() >= limits_.max_keys && !finished_.empty()) {
    erase(entries_.find(finished_.front()));
  }
  if (entries_.size() >= limits_.max_keys) return {Claim::kFull, nullptr};
  auto e = std::make_shared<Entry>();
  e->tool = std::string(tool);
  e->arguments = std::string(arguments);
  e->bytes = bytes_of(scope, *e);
  bytes_ += e->bytes;
  entries_.emplace(scope, Slot{e, finished_.end()});
  return {Claim::kStarted, e};
}

void Ledger::finish(const std::string& scope, const std::shared_ptr<Entry>& entry,
                    call::Result result, Clock::time_point now) {
  const bool keep = may_have_run(result.fault);
  entry->done = true;
  entry->result = std::move(result);
  entry->expires = now + limits_.ttl;
  for (auto& w : entry->waiting) {
    if (auto timer = w.lock()) timer->cancel();
  }
  entry->waiting.clear();
  auto it = entries_.find(scope);
  if (it == entries_.end() || it->second.entry != entry) return;
  if (!keep) {
    erase(it);
    return;
  }
  bytes_ -= entry->bytes;
  entry->bytes = bytes_of(scope, *entry);
  bytes_ += entry->bytes;
  it->second.finished = finished_.insert(finished_.end(), scope);
  trim(now);
}

void Ledger::trim(Clock::time_point now) {
  // finished_ is in order of finishing, so of expiry too (one TTL for all).
  while (!finished_.empty()) {
    auto it = entries_.find(finished_.front());
    const bool over = bytes_ > limits_.max_bytes || entries_.size() > limits_.max_keys;
    if (it != entries_.end() && !over && it->second.entry->expires > now) break;
    if (it == entries_.end()) {
      finished_.pop_front();
      continue;
    }
    erase(it);
  }
}

void Ledger::erase(std::unordered_map<std::string, Slot>::iterator it) {
  bytes_ -= it->second.entry->bytes;
  if (it->second.finished != finished_.end()) finished_.erase(it->second.finished);
  entries_.erase(it);
}

}  // namespace toolbridge::idempotency
