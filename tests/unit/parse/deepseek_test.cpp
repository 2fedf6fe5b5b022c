#include <gtest/gtest.h>

#include "parse_support.h"

namespace toolbridge::parse {
namespace {

using testing::calls_after;
using testing::expect_text_kept;
using testing::split_everywhere;
using testing::summary;
using V = std::vector<std::string>;

const std::string kV3 =
    "Let me check.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n"
    "```json\n{\"q\": \"x\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>"
    "add\n```json\n{\"a\": 1}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";

TEST(DeepSeek, V3TwoCalls) {
  const auto x = split_everywhere("deepseek_v3", kV3);
  EXPECT_EQ(summary(x), (V{"search||{\"q\": \"x\"}", "add||{\"a\": 1}"}));
  EXPECT_EQ(x.content, "Let me check.");
}

TEST(DeepSeek, V31Shape) {
  const auto x = split_everywhere(
      "deepseek_v3.1",
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>{\"q\": \"x\"}"
      "<｜tool▁call▁end｜><｜tool▁calls▁end｜> after");
  EXPECT_EQ(summary(x), (V{"search||{\"q\": \"x\"}"}));
  EXPECT_EQ(x.content, "after");
}

TEST(DeepSeek, CutOffAndMissingSeparator) {
  const auto x = split_everywhere(
      "deepseek_v3",
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>nosep<｜tool▁call▁end｜><｜tool▁call▁begin｜>"
      "function<｜tool▁sep｜>a\n```json\n{\"q");
  ASSERT_EQ(x.unparsed.size(), 2u);
  EXPECT_NE(x.unparsed[0].reason.find("tool▁sep"), std::string::npos);
  EXPECT_NE(x.unparsed[1].reason.find("cut off"), std::string::npos);
}

TEST(DeepSeek, EachCallReportedAtItsEndToken) {
  const std::size_t first =
      kV3.find("<｜tool▁call▁end｜>") + std::string("<｜tool▁call▁end｜>").size();
  EXPECT_EQ(calls_after("deepseek_v3", kV3, first - 1), 0u);
  EXPECT_EQ(calls_after("deepseek_v3", kV3, first), 1u);
}

TEST(DeepSeek, Adversarial) {
  for (const char* text : {"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁begin｜>junk",
                           "<｜tool▁call▁begin｜><｜tool▁sep｜><｜tool▁call▁end｜>",
                           "<｜tool▁calls▁end｜>", "<｜tool▁call"}) {
    expect_text_kept(text, split_everywhere("deepseek_v3", text));
  }
}

}  // namespace
}  // namespace toolbridge::parse
