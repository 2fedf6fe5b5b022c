#include <gtest/gtest.h>

#include "parse_support.h"

namespace toolbridge::parse {
namespace {

using testing::calls_after;
using testing::expect_text_kept;
using testing::split_everywhere;
using testing::summary;
using V = std::vector<std::string>;

TEST(Llama3Json, BareObjectAndParametersKey) {
  const auto x =
      split_everywhere("llama3_json", " {\"name\": \"search\", \"parameters\": {\"q\": \"x\"}}");
  EXPECT_EQ(summary(x), (V{"search||{\"q\":\"x\"}"}));
  EXPECT_EQ(x.content, "");
}

TEST(Llama3Json, PythonTagAndSemicolonSeparatedCalls) {
  const auto x = split_everywhere("llama3_json",
                                  "Sure.<|python_tag|>{\"name\":\"a\",\"arguments\":{}}; "
                                  "{\"name\":\"b\",\"arguments\":{\"n\":2}}");
  EXPECT_EQ(summary(x), (V{"a||{}", "b||{\"n\":2}"}));
  EXPECT_EQ(x.content, "Sure.");
}

TEST(Llama3Json, AnObjectThatIsNotACallOrNotFirstIsContent) {
  const auto x = split_everywhere("llama3_json", "{\"answer\": 42}");
  EXPECT_TRUE(x.calls.empty());
  EXPECT_EQ(x.content, "{\"answer\": 42}");
  const auto later = split_everywhere("llama3_json", "Example: {\"name\":\"a\",\"arguments\":{}}");
  EXPECT_TRUE(later.calls.empty());
}

TEST(Llama3Json, AfterReasoning) {
  const auto x = split_everywhere(
      "llama3_json", "<think>hm</think>\n{\"name\":\"a\",\"arguments\":{\"k\":[1,{\"z\":\"}\"}]}}");
  EXPECT_EQ(summary(x), (V{"a||{\"k\":[1,{\"z\":\"}\"}]}"}));
}

TEST(Llama3Json, CutOff) {
  const auto x =
      split_everywhere("llama3_json", "<|python_tag|>{\"name\":\"a\",\"arguments\":{\"q");
  EXPECT_EQ(summary(x), (V{"!cut off before the call's object closed"}));
}

TEST(Llama3Json, EachCallReportedWhenItsBraceCloses) {
  const std::string text =
      "<|python_tag|>{\"name\":\"a\",\"arguments\":{}};{\"name\":\"b\",\"arguments\":{}}";
  const std::size_t first = text.find("};") + 1;
  EXPECT_EQ(calls_after("llama3_json", text, first - 1), 0u);
  EXPECT_EQ(calls_after("llama3_json", text, first), 1u);
}

TEST(Llama3Json, Adversarial) {
  for (const char* text : {"{", "{}", "<|python_tag|>", "<|python_tag|>print(1)",
                           "{\"name\":", "{\"name\":\"a\",\"arguments\":{}};;", "{]"}) {
    expect_text_kept(text, split_everywhere("llama3_json", text));
  }
}

}  // namespace
}  // namespace toolbridge::parse
