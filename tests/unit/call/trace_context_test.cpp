#include "call/trace_context.h"

#include <gtest/gtest.h>

namespace toolbridge::call {
namespace {

constexpr const char* kValid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TraceContext, TheW3cExampleIsValid) {
  EXPECT_TRUE(valid_traceparent(kValid));
}

TEST(TraceContext, MalformedValuesAreRefused) {
  std::string s = kValid;
  EXPECT_FALSE(valid_traceparent(""));
  EXPECT_FALSE(valid_traceparent(s.substr(0, 54)));     // short
  EXPECT_FALSE(valid_traceparent(s + "-00"));           // a later version's form
  EXPECT_FALSE(valid_traceparent("ff" + s.substr(2)));  // version ff
  EXPECT_FALSE(valid_traceparent("01" + s.substr(2)));  // only 00 is known
  EXPECT_FALSE(valid_traceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"));
  EXPECT_FALSE(valid_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01"));
  EXPECT_FALSE(valid_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"));
  EXPECT_FALSE(valid_traceparent("00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
  EXPECT_FALSE(valid_traceparent("00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01"));
  s[54] = '\n';
  EXPECT_FALSE(valid_traceparent(s));
}

}  // namespace
}  // namespace toolbridge::call
