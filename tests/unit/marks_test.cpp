#include "base/marks.h"

#include <gtest/gtest.h>

namespace toolbridge::base {
namespace {

TEST(Marks, MarksItemsBelowAndPast64) {
  for (const std::size_t n : {std::size_t{3}, std::size_t{64}, std::size_t{200}}) {
    Marks marks(n);
    for (std::size_t i = 0; i < n; i += 3) marks.mark(i);
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(marks.marked(i), i % 3 == 0) << n << " " << i;
  }
}

}  // namespace
}  // namespace toolbridge::base
