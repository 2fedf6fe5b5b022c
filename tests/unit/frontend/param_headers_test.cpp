#include "frontend/param_headers.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>
#include <string>

namespace toolbridge::frontend {
namespace {

namespace bj = boost::json;

struct Headers {
  std::multimap<std::string, std::string> values;
  mcp::HeaderView view() const {
    return {[this](std::string_view name) -> std::optional<std::string_view> {
              auto it = values.find(std::string(name));
              if (it == values.end()) return std::nullopt;
              return std::string_view(it->second);
            },
            [this](std::string_view name) { return values.count(std::string(name)); }};
  }
};

const HeaderParams kRegion{{"region", "Region"}};

std::optional<mcp::Rejection> check(bj::object args, std::multimap<std::string, std::string> h) {
  Headers headers{std::move(h)};
  return check_param_headers(args, kRegion, headers.view());
}

TEST(ParamHeaders, MatchingValuesPassPlainOrBase64) {
  EXPECT_FALSE(check({{"region", "Hello"}}, {{"Mcp-Param-Region", "Hello"}}));
  EXPECT_FALSE(check({{"region", "Hello"}}, {{"Mcp-Param-Region", "=?base64?SGVsbG8=?="}}));
  EXPECT_FALSE(check({{"region", "Hello"}}, {{"Mcp-Param-Region", "  Hello  "}}));  // OWS
  // Without both ends of the wrapper the value is literal text.
  EXPECT_FALSE(check({{"region", "SGVsbG8="}}, {{"Mcp-Param-Region", "SGVsbG8="}}));
  EXPECT_FALSE(
      check({{"region", "=?base64?SGVsbG8="}}, {{"Mcp-Param-Region", "=?base64?SGVsbG8="}}));
  EXPECT_FALSE(check({}, {}));  // absent from both
}

TEST(ParamHeaders, MismatchesAreHeaderMismatch) {
  for (auto [value, header] : std::initializer_list<std::pair<const char*, const char*>>{
           {"Hello", "=?base64?SGVsbG8?="},      // bad padding
           {"Hello", "=?base64?SGVs!!!bG8=?="},  // not the alphabet
           {"Hello", "Goodbye"},                 // another value
           {"hello", "Hello"}}) {                // values are case-sensitive
    auto r = check({{"region", value}}, {{"Mcp-Param-Region", header}});
    ASSERT_TRUE(r) << header;
    EXPECT_EQ(r->code, mcp::kHeaderMismatch);
    EXPECT_NE(r->message.find("Mcp-Param-Region"), std::string::npos);
  }
  EXPECT_TRUE(check({{"region", "Hello"}}, {}));            // header omitted
  EXPECT_TRUE(check({}, {{"Mcp-Param-Region", "Hello"}}));  // argument omitted
  EXPECT_TRUE(check({{"region", "a"}}, {{"Mcp-Param-Region", "a"}, {"Mcp-Param-Region", "a"}}));
}

TEST(ParamHeaders, NumbersAndBooleansTravelAsJsonText) {
  const HeaderParams n{{"count", "Count"}};
  Headers ok{{{"Mcp-Param-Count", "42"}}};
  EXPECT_FALSE(check_param_headers(bj::object{{"count", 42}}, n, ok.view()));
  Headers bad{{{"Mcp-Param-Count", "41"}}};
  EXPECT_TRUE(check_param_headers(bj::object{{"count", 42}}, n, bad.view()));
}

}  // namespace
}  // namespace toolbridge::frontend
