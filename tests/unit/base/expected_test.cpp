// base::Expected and base::Status: a value or a message, success or a message.
#include "base/expected.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <variant>

namespace toolbridge::base {
namespace {

Expected<int> half(int n) {
  if (n % 2 != 0) return fail(std::to_string(n) + " is odd");
  return n / 2;
}

Status check_even(int n) {
  if (auto h = half(n); !h) return Unexpected{h.error()};
  return {};
}

TEST(Expected, HoldsTheValue) {
  const Expected<int> e = half(8);
  EXPECT_TRUE(e.ok());
  EXPECT_TRUE(static_cast<bool>(e));
  EXPECT_EQ(e.value(), 4);
  EXPECT_EQ(*e, 4);
  EXPECT_EQ(e.error(), "");
}

TEST(Expected, HoldsTheMessage) {
  const Expected<int> e = half(7);
  EXPECT_FALSE(e.ok());
  EXPECT_FALSE(static_cast<bool>(e));
  EXPECT_EQ(e.error(), "7 is odd");
  EXPECT_THROW((void)e.value(), std::bad_variant_access);  // a bug, not a failure
}

TEST(Expected, AStringValueIsNotAnError) {
  // Expected<std::string> keeps the two apart even when they have the same type, and an empty
  // value is a success.
  Expected<std::string> empty_value = std::string();
  EXPECT_TRUE(empty_value.ok());
  EXPECT_EQ(*empty_value, "");
  Expected<std::string> from_literal = "text";
  EXPECT_EQ(*from_literal, "text");
  EXPECT_EQ(from_literal->size(), 4u);
  Expected<std::string> failed = fail("");
  EXPECT_FALSE(failed.ok());  // a failure even with an empty message
}

TEST(Expected, MovesOutAMoveOnlyValue) {
  Expected<std::unique_ptr<int>> e = std::make_unique<int>(5);
  ASSERT_TRUE(e);
  std::unique_ptr<int> p = std::move(e).value();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 5);
  Expected<std::unique_ptr<int>> none = Unexpected{"no int"};
  EXPECT_EQ(none.error(), "no int");
}

TEST(Expected, ArrowReachesTheValue) {
  struct Pair {
    int a = 1;
    int b = 2;
  };
  Expected<Pair> e = Pair{};
  e->b = 3;
  EXPECT_EQ(e->a + e->b, 4);
}

TEST(Status, SuccessAndFailure) {
  EXPECT_TRUE(check_even(2).ok());
  EXPECT_TRUE(static_cast<bool>(Status::success()));
  EXPECT_EQ(check_even(2).error(), "");
  const Status s = check_even(3);
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(static_cast<bool>(s));
  EXPECT_EQ(s.error(), "3 is odd");
  EXPECT_FALSE(Status(fail("")).ok());
}

}  // namespace
}  // namespace toolbridge::base
