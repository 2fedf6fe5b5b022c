#pragma once
// The machine's floor: what one cross-process wake-up costs here, measured in the same run as
// the scenarios so latencies can be reported as a ratio to it.
#include <string>

namespace toolbridge::bench {

struct Floor {
  // Medians of one-byte ping-pongs with a forked child, over two pipes and over a 127.0.0.1 TCP
  // connection with TCP_NODELAY; both processes pinned to one CPU, then to two different CPUs.
  // A cross-CPU wake-up is what is expensive on these VMs; on one CPU it is a context switch.
  double pipe_rtt_us = 0;        // cross-CPU (the floor ratios use these)
  double tcp_rtt_us = 0;
  double pipe_same_cpu_us = 0;
  double tcp_same_cpu_us = 0;
  int cpus = 1;                  // CPUs this process may run on; with 1 the cross figures are same-CPU
  int samples = 0;
};

// Returns an empty string on success, else what failed. Forks: call before starting threads.
std::string measure_floor(int samples, Floor& out);

}  // namespace toolbridge::bench
