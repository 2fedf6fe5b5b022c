#include <gtest/gtest.h>

#include "parse_support.h"

namespace toolbridge::parse {
namespace {

using testing::calls_after;
using testing::expect_text_kept;
using testing::split_everywhere;
using testing::summary;
using V = std::vector<std::string>;

TEST(Qwen3Coder, OneCallWithParameters) {
  const auto x = split_everywhere(
      "qwen3_coder",
      "Checking.\n<tool_call>\n<function=run_code>\n<parameter=code>\nprint(1)\n</parameter>\n"
      "<parameter=timeout>\n5\n</parameter>\n</function>\n</tool_call>");
  EXPECT_EQ(summary(x), (V{"run_code|||code=print(1)|timeout=5"}));
  EXPECT_EQ(x.content, "Checking.");
}

TEST(Qwen3Coder, SeveralCallsAndMultiLineValues) {
  const auto x = split_everywhere(
      "qwen3_coder",
      "<tool_call><function=a><parameter=x>\nline 1\nline 2\n</parameter></function></tool_call>"
      "<tool_call><function=b></function></tool_call>");
  EXPECT_EQ(summary(x), (V{"a|||x=line 1\nline 2", "b||"}));
}

TEST(Qwen3Coder, MissingClosingTagsAreTolerated) {
  const auto x = split_everywhere(
      "qwen3_coder",
      "<tool_call><function=a><parameter=x>1<parameter=y>2</function></tool_call>\n"
      "<function=b><parameter=z>3</parameter></function> done");
  EXPECT_EQ(summary(x), (V{"a|||x=1|y=2", "b|||z=3"}));
  EXPECT_EQ(x.content, "done");
  const auto open_end =
      split_everywhere("qwen3_coder", "<tool_call><function=a><parameter=x>1</parameter>");
  EXPECT_EQ(summary(open_end), (V{"a|||x=1"}));
}

TEST(Qwen3Coder, AValueHoldingTagsEndsAtItsOwnClosingTag) {
  const auto x = split_everywhere(
      "qwen3_coder",
      "<tool_call><function=a><parameter=x>\n</tool_call> and <tool_call>\n</parameter>"
      "</function></tool_call>");
  EXPECT_EQ(summary(x), (V{"a|||x=</tool_call> and <tool_call>"}));
  const auto late = split_everywhere(
      "qwen3_coder", "<tool_call><function=a><parameter=x>1</tool_call>2</parameter>");
  EXPECT_EQ(summary(late), (V{"a|||x=1</tool_call>2"}));
}

TEST(Qwen3Coder, CutOffInsideAValueIsUnparsed) {
  const auto x = split_everywhere("qwen3_coder", "<tool_call><function=a><parameter=code>\nprint(");
  EXPECT_EQ(summary(x), (V{"!cut off inside parameter 'code'"}));
  const auto tag = split_everywhere("qwen3_coder", "<tool_call><function=sea");
  EXPECT_EQ(summary(tag), (V{"!cut off inside the <function=...> tag"}));
}

TEST(Qwen3Coder, HermesJsonAndMentionsAreNotCalls) {
  const auto x = split_everywhere(
      "qwen3_coder",
      "<tool_call>{\"name\":\"a\"}</tool_call> and `<function=x>` and\n```\n<function=y>\n```");
  EXPECT_TRUE(x.calls.empty());
  EXPECT_TRUE(x.unparsed.empty());
}

TEST(Qwen3Coder, ReportedWhenTheBlockEnds) {
  const std::string text =
      "<tool_call><function=a><parameter=x>1</parameter></function></tool_call> more";
  const std::size_t end = text.find("</tool_call>") + 12;
  EXPECT_EQ(calls_after("qwen3_coder", text, end - 1), 0u);
  EXPECT_EQ(calls_after("qwen3_coder", text, end), 1u);
}

TEST(Qwen3Coder, Adversarial) {
  for (const char* text : {"<function=", "<function=>", "<tool_call><function=a>", "<parameter=x>",
                           "<tool_call><function=a><parameter=",
                           "<function=a></function>"
                           "</tool_call></tool_call>"}) {
    expect_text_kept(text, split_everywhere("qwen3_coder", text));
  }
}

}  // namespace
}  // namespace toolbridge::parse
