#include <gtest/gtest.h>

#include "parse/extractor.h"
#include "parse_support.h"

namespace toolbridge::parse {
namespace {

using testing::calls_after;
using testing::expect_text_kept;
using testing::split_everywhere;
using testing::summary;
using V = std::vector<std::string>;

TEST(Hermes, OneCallWithContentAroundIt) {
  const auto x = split_everywhere(
      "hermes",
      "Let me look.\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n"
      "</tool_call>");
  EXPECT_EQ(summary(x), (V{"search||{\"q\":\"x\"}"}));
  EXPECT_EQ(x.content, "Let me look.");
  EXPECT_EQ(x.calls[0].text.substr(0, 11), "<tool_call>");
}

TEST(Hermes, SeveralCallsAndReasoning) {
  const auto x = split_everywhere(
      "hermes",
      "<think>two lookups</think><tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>\n"
      "<tool_call>{\"name\":\"b\",\"parameters\":{\"n\":1}}</tool_call>");
  EXPECT_EQ(summary(x), (V{"a||{}", "b||{\"n\":1}"}));
  EXPECT_TRUE(x.has_reasoning);
  EXPECT_EQ(x.reasoning, "two lookups");
  EXPECT_EQ(x.content, "");
}

TEST(Hermes, ArgumentsAsAStringStayAStringForResolve) {
  const auto x = split_everywhere(
      "hermes", "<tool_call>{\"name\":\"a\",\"arguments\":\"{\\\"k\\\": 2}\"}</tool_call>");
  EXPECT_EQ(summary(x), (V{"a||\"{\\\"k\\\": 2}\""}));
}

TEST(Hermes, AnUnclosedFinalBlockIsAccepted) {
  const auto x =
      split_everywhere("hermes", "ok <tool_call>{\"name\":\"a\",\"arguments\":{\"k\":\"}\"}}");
  EXPECT_EQ(summary(x), (V{"a||{\"k\":\"}\"}"}));
}

TEST(Hermes, CutOffInsideTheArgumentsIsUnparsedWithTheReason) {
  const auto x =
      split_everywhere("hermes", "<tool_call>{\"name\":\"a\",\"arguments\":{\"q\":\"hal");
  ASSERT_EQ(x.unparsed.size(), 1u);
  EXPECT_TRUE(x.calls.empty());
  EXPECT_NE(x.unparsed[0].reason.find("cut off"), std::string::npos) << x.unparsed[0].reason;
}

TEST(Hermes, MalformedJsonIsRepairedOrReported) {
  const auto fixed =
      split_everywhere("hermes", "<tool_call>{'name': 'a', 'arguments': {'k': 1,}}</tool_call>");
  EXPECT_EQ(summary(fixed), (V{"a||{\"k\":1}"}));
  EXPECT_FALSE(fixed.calls[0].fixes.empty());
  const auto bad = split_everywhere("hermes", "<tool_call>{\"arguments\": {}}</tool_call> after");
  EXPECT_EQ(summary(bad), (V{"!the call has no \"name\" string"}));
  EXPECT_EQ(bad.content, "after");
}

TEST(Hermes, FencedAndInlineCodeAndMentionsAreNotCalls) {
  const auto x = split_everywhere(
      "hermes",
      "Wrap calls in `<tool_call>{\"name\":\"x\",\"arguments\":{}}</tool_call>` like\n```\n"
      "<tool_call>{\"name\":\"y\",\"arguments\":{}}</tool_call>\n```\nThe <tool_call> tag is "
      "documented.");
  EXPECT_TRUE(x.calls.empty());
  EXPECT_TRUE(x.unparsed.empty());
  EXPECT_NE(x.content.find("```\n<tool_call>"), std::string::npos);
  EXPECT_NE(x.content.find("The <tool_call> tag"), std::string::npos);
}

TEST(Hermes, ACallIsReportedAsSoonAsItsClosingTagArrives) {
  const std::string text =
      "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call> and then some more text";
  const std::size_t closed = text.find("</tool_call>") + 12;
  EXPECT_EQ(calls_after("hermes", text, closed - 1), 0u);
  EXPECT_EQ(calls_after("hermes", text, closed), 1u);
}

TEST(Hermes, AdversarialInputsNeverCrashAndNeverLoseText) {
  for (const char* text :
       {"<tool_call>", "<tool_call><tool_call>", "</tool_call>", "<tool_call>{", "<tool_call>{}",
        "<tool_call>{\"name\":1}", "<tool_call>[1,2]</tool_call>", "``` <tool_call>", "`",
        "<think>", "</think><tool_call>{\"name\":\"a\"}", "<tool_call>{\"name\":\"a\"}}}}"}) {
    expect_text_kept(text, split_everywhere("hermes", text));
  }
  const auto nested = split_everywhere(
      "hermes", "<tool_call>{\"name\":\"a\",\"arguments\":{\"s\":\"</tool_call>\"}}</tool_call>");
  EXPECT_EQ(summary(nested), (V{"a||{\"s\":\"</tool_call>\"}"}));
}

TEST(Hermes, ImplicitReasoningBeforeTheFirstCall) {
  const auto x = split_everywhere(
      "hermes", "the template opened it</think>\n<tool_call>{\"name\":\"a\"}</tool_call>");
  EXPECT_EQ(x.reasoning, "the template opened it");
  EXPECT_EQ(summary(x), (V{"a||{}"}));
}

}  // namespace
}  // namespace toolbridge::parse
