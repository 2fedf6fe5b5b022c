#pragma once
// How many times each call key (a 64-bit hash of trajectory, server, tool and canonical
// arguments) has been seen: the replay key's occurrence number. An open-addressing table of
// (key, count) pairs, linear probing, doubled at half full: 16 bytes a slot, so about 32 bytes a
// distinct call, and no allocation per call (a node map allocates one per key).
#include <cstdint>
#include <utility>
#include <vector>

namespace toolbridge::replay {

class Occurrences {
 public:
  // Counts one more call of `key`; returns its number (1 for the first).
  std::uint64_t next(std::uint64_t key);
  std::size_t size() const { return used_; }

 private:
  void grow();

  // key 0 marks an empty slot (a key of 0 is counted as 1: one more collision in 2^64).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> slots_ =
      std::vector<std::pair<std::uint64_t, std::uint64_t>>(1024);
  std::size_t used_ = 0;
};

}  // namespace toolbridge::replay
