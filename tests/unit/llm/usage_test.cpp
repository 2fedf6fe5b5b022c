#include "llm/usage.h"

#include <gtest/gtest.h>

#include <string>

namespace toolbridge::llm {
namespace {

const std::string kLast =
    R"(data: {"choices":[],"usage": {"prompt_tokens": 4012, "completion_tokens": 8, )"
    R"("prompt_tokens_details": {"cached_tokens": 3968}}})"
    "\n\ndata: [DONE]\n\n";

TEST(LlmUsage, ReadsWholeBody) {
  UsageScanner s;
  s.feed(kLast);
  EXPECT_EQ(s.prompt_tokens(), 4012u);
  EXPECT_EQ(s.cached_tokens(), 3968u);
  EXPECT_EQ(s.completion_tokens(), 8u);
}

TEST(LlmUsage, ReadsAcrossEverySplit) {
  for (std::size_t cut = 1; cut < kLast.size(); ++cut) {
    UsageScanner s;
    s.feed(std::string_view(kLast).substr(0, cut));
    s.feed(std::string_view(kLast).substr(cut));
    EXPECT_EQ(s.prompt_tokens(), 4012u) << cut;
    EXPECT_EQ(s.cached_tokens(), 3968u) << cut;
    EXPECT_EQ(s.completion_tokens(), 8u) << cut;
  }
}

TEST(LlmUsage, ReadsByteByByte) {
  UsageScanner s;
  for (char c : kLast) s.feed(std::string_view(&c, 1));
  EXPECT_EQ(s.cached_tokens(), 3968u);
}

TEST(LlmUsage, AbsentOrGarbage) {
  UsageScanner s;
  s.feed(R"({"cached_tokens": "x", "prompt_tokens": -1})");
  EXPECT_FALSE(s.cached_tokens());
  EXPECT_FALSE(s.prompt_tokens());
  EXPECT_FALSE(s.completion_tokens());
}

}  // namespace
}  // namespace toolbridge::llm
