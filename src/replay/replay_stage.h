#pragma once
// The replay stage (after repair, before idempotency, the cache and admission; docs/replay.md):
// records every tools/call a server answers into gateway.record's cassette, and answers calls
// from gateway.replay's cassette by the key (trajectory, server, tool, canonical arguments,
// occurrence). A replayed call takes no admission slot and reaches no server; its result carries
// _meta["toolbridge/replay"]. A call the cassette does not hold is, in strict mode, an error
// naming it and the nearest recorded call; in fallthrough mode it runs live (and is recorded).
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "base/clock.h"
#include "call/stage.h"
#include "config/config.h"
#include "replay/cassette.h"
#include "replay/occurrences.h"
#include "replay/recorder.h"
#include "telemetry/metrics.h"

namespace toolbridge::replay {

class ReplayStage final : public call::Stage {
 public:
  // Either of `cassette` and `recorder` may be null (not both, or the stage is not built).
  ReplayStage(const config::Config& config, const Cassette* cassette, Recorder* recorder,
              telemetry::Metrics& metrics, const base::Clock& clock);

  std::string_view name() const override { return "replay"; }
  bool applies(const call::Call& call) const override { return call.is_tool_call(); }
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next next) override;

  // The cassette's trajectory a call of trajectory `name` (of KeyHash::name `hash`) is answered
  // from: the same name if the cassette has it, else the first one (in the order of first use)
  // no other name has claimed.
  struct Tape {
    std::string name;
    std::string tape;
    std::uint64_t tape_hash = 0;  // KeyHash::name(tape)
  };
  const Tape& tape_trajectory(const std::string& name, std::uint64_t hash);

 private:
  // The call run by the rest of the chain (recorded if it is recording).
  boost::asio::awaitable<call::Result> live(call::Call& call, call::Next next,
                                            std::string arguments, std::uint64_t occurrence);
  call::Result replayed(const call::Call& call, const CallRecord& rec);
  call::Result miss(const call::Call& call, const std::string& trajectory,
                    std::string_view arguments, std::uint64_t occurrence);
  void record(call::Call& call, std::string_view arguments, std::uint64_t occurrence,
              const call::Result& result);
  void record_replayed(const call::Call& call, const CallRecord& rec);
  const std::string& server_fingerprint(const call::Call& call);
  // Adds one to toolbridge_replayed_calls_total{result}; `cell` caches its series.
  void count(std::uint64_t*& cell, std::string_view result);

  const config::Config& config_;
  const Cassette* cassette_;
  Recorder* recorder_;
  bool strict_;
  telemetry::Metrics& metrics_;
  std::uint64_t* hits_ = nullptr;  // the series of each result, once looked up
  std::uint64_t* misses_ = nullptr;
  std::uint64_t* lives_ = nullptr;
  const base::Clock& clock_;
  // The call's canonical arguments, made in place call after call (no allocation of their own
  // for a replayed call); the stage runs on one thread, and a call run live takes a copy.
  std::string arguments_;
  // Calls so far, by a 64-bit hash of (trajectory, server, tool, canonical arguments): one probe
  // and no string kept per call (two distinct calls share a count only on a hash collision).
  Occurrences seen_;
  // The fallback of trajectory names (tape_trajectory), by the hash of the name (the call's key
  // needs it anyway): no string hashed twice per call.
  std::unordered_map<std::uint64_t, Tape> mapped_;
  std::unordered_set<std::string> claimed_;
  std::size_t next_unclaimed_ = 0;
  // Per server: the lists its fingerprint was last worked out from, and the fingerprint.
  std::unordered_map<std::string, std::pair<const void*, std::string>> fingerprints_;
};

}  // namespace toolbridge::replay
