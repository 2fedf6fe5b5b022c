#pragma once
// What agent frameworks did per tool call: spawn the stdio server, initialize, call, close stdin,
// wait for the exit. Blocking and sequential on purpose — it is the cost of one such call.
#include <chrono>
#include <string>
#include <vector>

namespace toolbridge::bench {

struct SpawnCallResult {
  double ms = 0;            // spawn to reaped
  std::string error;        // empty on success
  bool killed = false;      // did not exit on stdin EOF within the grace period
};

SpawnCallResult spawn_per_call(const std::vector<std::string>& argv, const std::string& tool,
                               const std::string& arguments_json, std::chrono::milliseconds timeout,
                               std::chrono::milliseconds exit_grace);

}  // namespace toolbridge::bench
