#pragma once
// A helper program the bench runs to completion (the Python SDK rollout driver, the plotter):
// input written to its stdin, stdout collected, stderr kept as a tail for error messages, the
// whole run bounded in time, and the process group killed and reaped on every path.
#include <chrono>
#include <string>
#include <vector>

namespace toolbridge::bench {

struct HelperResult {
  std::string out;          // everything it wrote to stdout
  std::string stderr_tail;  // its last stderr lines
  std::string error;        // empty when it exited with code 0 in time
};

HelperResult run_helper(const std::vector<std::string>& argv, const std::string& input,
                        std::chrono::milliseconds timeout);

}  // namespace toolbridge::bench
