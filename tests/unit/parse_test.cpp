#include "json/parse.h"

#include <gtest/gtest.h>

#include <string>

using namespace toolbridge;

namespace {
std::string nested(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}
}  // namespace

TEST(JsonParse, AcceptsUpToTheDepthLimitAndRejectsPastItWithoutThrowing) {
  boost::system::error_code ec;
  json::parse(nested(json::kMaxDepth), ec);
  EXPECT_FALSE(ec) << ec.message();
  json::parse(nested(json::kMaxDepth + 1), ec);
  EXPECT_TRUE(ec);
  json::parse(nested(100000), ec);
  EXPECT_TRUE(ec);
}

TEST(JsonParse, InvalidUtf8IsAnErrorNotAnException) {
  boost::system::error_code ec;
  const auto v = json::parse("{\"message\":\"no \xff way\"}", ec);
  EXPECT_TRUE(ec);
  EXPECT_TRUE(v.is_null());
}
