#pragma once
// The record and replay stages' own CPU per call, measured in this process: the stages the
// gateway runs, fed calls as a front end makes them and answered by a last stage in place of
// the server, so no socket, pipe or other process adds its noise. What the paired gateways of
// `overhead --record` cannot resolve (their windows' spread is wider than the cost), this can.
#include <cstddef>
#include <string>

namespace toolbridge::bench {

struct StageCosts {
  std::string error;  // why it could not be measured; empty if it was
  std::size_t rounds = 0;
  std::size_t calls_per_round = 0;
  std::size_t records = 0;  // in the cassette the replay rounds read
  // The medians over the rounds of each chain's process CPU per call, in µs.
  double answer_us = 0;     // the last stage alone (a call made, answered, dropped)
  double record_us = 0;     // the replay stage recording in front of it (its writes in)
  double replay_us = 0;     // the replay stage answering from a cassette (strict)
  double cache_hit_us = 0;  // the idempotency and cache stages answering from a warm cache
  // The medians over the rounds of the paired differences, in µs per call.
  double record_extra_us = 0;      // record - answer
  double replay_extra_us = 0;      // replay - answer
  double cache_hit_extra_us = 0;   // cache hit - answer
  double replay_minus_hit_us = 0;  // replay - cache hit
  double replay_minus_hit_lo = 0;  // its first quartile over the rounds
  double replay_minus_hit_hi = 0;  // its third quartile
  double record_extra_lo = 0, record_extra_hi = 0;
};

// `workers` coroutines on one thread, each making `calls_per_worker` fixture__echo calls of a
// trajectory of its own per round, the chains taking turns round after round. The calls' arguments
// are all {"text":"hello"} (occurrences 1..calls_per_worker; every cache hit reads one entry), or
// with `distinct` each call's own (each replayed and each cache hit reads an entry of its own, as
// in an evaluation). `dir` is where the cassette is written (removed after).
StageCosts measure_stage_costs(std::size_t workers, std::size_t calls_per_worker,
                               std::size_t rounds, bool distinct, const std::string& dir);

}  // namespace toolbridge::bench
