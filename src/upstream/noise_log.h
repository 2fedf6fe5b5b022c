#pragma once
// What a server keeps getting wrong (lines that are not JSON-RPC, messages nested too deep,
// invalid UTF-8, stderr floods) is counted in full but logged sparingly: the first few of each
// interval in full, the rest as one "N more" summary, so a flooding server cannot flood the log.
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "base/clock.h"

namespace toolbridge::upstream {

class NoiseLog {
 public:
  struct Verdict {
    bool log = false;              // log this one in full
    std::uint64_t suppressed = 0;  // events not logged in the interval that just ended
    std::chrono::milliseconds interval{0};
  };

  NoiseLog(const base::Clock& clock, std::size_t burst, std::chrono::milliseconds interval)
      : clock_(clock), burst_(burst), interval_(interval) {}

  // Records one event and says what to log for it.
  Verdict record();
  std::uint64_t total() const { return total_; }

 private:
  const base::Clock& clock_;
  std::size_t burst_;
  std::chrono::milliseconds interval_;
  base::Clock::time_point window_start_{};
  bool started_ = false;
  std::size_t logged_ = 0;        // in full, in the current interval
  std::uint64_t suppressed_ = 0;  // in the current interval
  std::uint64_t total_ = 0;
};

}  // namespace toolbridge::upstream
