#include "replay/occurrences.h"

#include <bit>

namespace toolbridge::replay {

namespace {
// The slot a key starts probing at: the high bits of the key times 2^64/phi (Fibonacci hashing),
// so keys that differ only in their high bits still spread.
std::size_t home(std::uint64_t key, std::size_t size) {
  return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - std::countr_zero(size)));
}
}  // namespace

std::uint64_t Occurrences::next(std::uint64_t key) {
  if (key == 0) key = 1;
  if ((used_ + 1) * 2 > slots_.size()) grow();
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = home(key, slots_.size());; i = (i + 1) & mask) {
    auto& [k, count] = slots_[i];
    if (k == key) return ++count;
    if (k == 0) {
      k = key;
      ++used_;
      return count = 1;
    }
  }
}

void Occurrences::grow() {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> old(slots_.size() * 2);
  old.swap(slots_);
  const std::size_t mask = slots_.size() - 1;
  for (const auto& [k, count] : old) {
    if (k == 0) continue;
    std::size_t i = home(k, slots_.size());
    while (slots_[i].first != 0) i = (i + 1) & mask;
    slots_[i] = {k, count};
  }
}

}  // namespace toolbridge::replay
