#include "json/parse.h"

#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
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

TEST(JsonParse, NumbersPastADoubleStayJsonWhenWrittenBack) {
  boost::system::error_code ec;
  const auto v = json::parse(R"({"maximum":1e999,"minimum":[-1e400],"ok":1.5})", ec);
  ASSERT_FALSE(ec) << ec.message();
  const std::string text = boost::json::serialize(v);
  EXPECT_EQ(text.find("Infinity"), std::string::npos) << text;
  json::parse(text, ec);
  EXPECT_FALSE(ec) << text;
  EXPECT_EQ(v.at("ok").as_double(), 1.5);
}

TEST(JsonParse, AZeroWithAHugeExponentIsZeroNotNaN) {
  boost::system::error_code ec;
  const auto v = json::parse(R"({"a":0E1100,"b":[-0e999,0.0e400]})", ec);
  ASSERT_FALSE(ec) << ec.message();
  const std::string text = boost::json::serialize(v);
  EXPECT_EQ(text.find("NaN"), std::string::npos) << text;
  json::parse(text, ec);
  EXPECT_FALSE(ec) << text;
  EXPECT_EQ(v.at("a").as_double(), 0.0);
  EXPECT_EQ(v.at("b").as_array()[0].as_double(), 0.0);
  EXPECT_EQ(v.at("b").as_array()[1].as_double(), 0.0);
}
