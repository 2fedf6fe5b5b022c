#include <gtest/gtest.h>

#include "parse_support.h"

namespace toolbridge::parse {
namespace {

using testing::calls_after;
using testing::expect_text_kept;
using testing::split_everywhere;
using testing::summary;
using V = std::vector<std::string>;

TEST(Mistral, ArrayForm) {
  const auto x = split_everywhere(
      "mistral",
      "[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"k\": 1}}, {\"name\": \"b\", "
      "\"arguments\": \"{}\"}]");
  EXPECT_EQ(summary(x), (V{"a||{\"k\":1}", "b||\"{}\""}));
}

TEST(Mistral, V11FormWithAndWithoutArgsToken) {
  const auto x = split_everywhere(
      "mistral", "Doing it.[TOOL_CALLS]get_weather{\"city\": \"Paris\"}[TOOL_CALLS]b[ARGS]{}");
  EXPECT_EQ(summary(x), (V{"get_weather||{\"city\": \"Paris\"}", "b||{}"}));
  EXPECT_EQ(x.content, "Doing it.");
}

TEST(Mistral, CutOffAndMalformed) {
  const auto cut =
      split_everywhere("mistral", "[TOOL_CALLS] [{\"name\":\"a\",\"arguments\":{}}, {\"na");
  EXPECT_EQ(summary(cut), (V{"a||{}", "!cut off before the call's object closed"}));
  const auto v11 = split_everywhere("mistral", "[TOOL_CALLS]a{\"x\":");
  EXPECT_EQ(summary(v11), (V{"!cut off before the call's arguments closed"}));
}

TEST(Mistral, MentionsAndFences) {
  const auto x = split_everywhere("mistral", "Use [TOOL_CALLS] then. ```[TOOL_CALLS]a{}```");
  EXPECT_TRUE(x.calls.empty());
  EXPECT_TRUE(x.unparsed.empty());
}

TEST(Mistral, EachArrayElementReportedWhenItCloses) {
  const std::string text =
      "[TOOL_CALLS][{\"name\":\"a\",\"arguments\":{}},{\"name\":\"b\",\"arguments\":{}}]";
  const std::size_t first = text.find("}},") + 2;
  EXPECT_EQ(calls_after("mistral", text, first - 1), 0u);
  EXPECT_EQ(calls_after("mistral", text, first), 1u);
}

TEST(Mistral, Adversarial) {
  for (const char* text : {"[TOOL_CALLS]", "[TOOL_CALLS][", "[TOOL_CALLS][]", "[TOOL_CALLS][x]",
                           "[TOOL_CALLS]a", "[TOOL_CALLS]a[ARGS]", "[TOOL_CALLS][{}]",
                           "[TOOL_CALLS][{\"name\":\"a\"} {\"name\":\"b\"}]"}) {
    expect_text_kept(text, split_everywhere("mistral", text));
  }
}

}  // namespace
}  // namespace toolbridge::parse
