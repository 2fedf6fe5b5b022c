#pragma once
// Which of n items a pass has marked: a bit each in one word, a vector only past 64 items, so the
// usual few allocate nothing.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace toolbridge::base {

class Marks {
 public:
  explicit Marks(std::size_t n) : many_(n > 64 ? n : 0, false) {}
  void mark(std::size_t i) {
    if (i < 64)
      few_ |= std::uint64_t{1} << i;
    else
      many_[i] = true;
  }
  bool marked(std::size_t i) const {
    return i < 64 ? (few_ >> i & 1) != 0 : static_cast<bool>(many_[i]);
  }

 private:
  std::uint64_t few_ = 0;
  std::vector<bool> many_;
};

}  // namespace toolbridge::base
