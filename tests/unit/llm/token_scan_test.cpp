#include "llm/token_scan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace toolbridge::llm {
namespace {

using Ids = std::vector<std::uint32_t>;

const std::string kVllm =
    R"({"id":"c1","object":"chat.completion","prompt_token_ids":[1,2,3],)"
    R"("choices":[{"index":0,"message":{"role":"assistant","content":"hi"},)"
    R"("logprobs":{"content":[{"token":"h","logprob":-0.5,"top_logprobs":[{"token":"x","logprob":-9}]},)"
    R"({"token":"i","logprob":-0.25,"top_logprobs":[]}]},"finish_reason":"stop","token_ids":[7,8]}],)"
    R"("usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,)"
    R"("prompt_tokens_details":{"cached_tokens":1}}})";

const std::string kSglangStream =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"output_ids\":[5],"
    "\"meta_info\":{\"output_token_logprobs\":[[-0.1,5,null]],"
    "\"input_token_logprobs\":[[null,1,null],[-2.5,2,null]]}}]}\n\n"
    ": a comment\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"},\"output_ids\":[5,6],"
    "\"meta_info\":{\"output_token_logprobs\":[[-0.1,5,null],[-0.2,6,null]]},"
    "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":2}}\n\n"
    "data: [DONE]\n\n";

TokenData scan(bool stream, const std::string& text) {
  TokenScanner s(stream, 1000);
  s.feed(text);
  return s.finish();
}

TEST(TokenScan, ReadsVllmBody) {
  const TokenData d = scan(false, kVllm);
  EXPECT_EQ(d.prompt_ids, (Ids{1, 2, 3}));
  EXPECT_EQ(d.completion_ids, (Ids{7, 8}));
  // top_logprobs are not the sampled tokens' logprobs.
  ASSERT_EQ(d.completion_logprobs.size(), 2u);
  EXPECT_FLOAT_EQ(d.completion_logprobs[0], -0.5f);
  EXPECT_FLOAT_EQ(d.completion_logprobs[1], -0.25f);
  EXPECT_EQ(d.prompt_tokens, 3u);
  EXPECT_EQ(d.completion_tokens, 2u);
  EXPECT_EQ(d.total_tokens, 5u);
  EXPECT_EQ(d.cached_tokens, 1u);
  EXPECT_EQ(d.finish_reason, "stop");
  EXPECT_EQ(d.shape, "vllm");
  EXPECT_FALSE(d.truncated);
  EXPECT_EQ(d.malformed, 0u);
}

TEST(TokenScan, ReadsSglangStreamCumulative) {
  const TokenData d = scan(true, kSglangStream);
  EXPECT_EQ(d.prompt_ids, (Ids{1, 2}));      // from input_token_logprobs
  EXPECT_EQ(d.completion_ids, (Ids{5, 6}));  // the last output_ids, not both
  ASSERT_EQ(d.completion_logprobs.size(), 2u);
  EXPECT_FLOAT_EQ(d.completion_logprobs[1], -0.2f);
  EXPECT_EQ(d.finish_reason, "length");
  EXPECT_EQ(d.shape, "sglang");
  EXPECT_EQ(d.malformed, 0u);  // [DONE] and the comment are not faults
}

TEST(TokenScan, VllmStreamAppendsDeltas) {
  const std::string s =
      "data: "
      "{\"prompt_token_ids\":[4,5],\"choices\":[{\"index\":0,\"delta\":{},\"token_ids\":[9]}]}"
      "\r\n\r\n"
      "data:{\"choices\":[{\"index\":0,\"delta\":{},\"token_ids\":[10,11],"
      "\"logprobs\":{\"content\":[{\"logprob\":null}]}}]}\n\ndata: [DONE]\n\n";
  const TokenData d = scan(true, s);
  EXPECT_EQ(d.prompt_ids, (Ids{4, 5}));
  EXPECT_EQ(d.completion_ids, (Ids{9, 10, 11}));
  ASSERT_EQ(d.completion_logprobs.size(), 1u);
  EXPECT_TRUE(std::isnan(d.completion_logprobs[0]));
}

TEST(TokenScan, EverySplitGivesTheSameRecord) {
  const TokenData whole = scan(true, kSglangStream);
  for (std::size_t cut = 1; cut < kSglangStream.size(); ++cut) {
    TokenScanner s(true, 1000);
    s.feed(std::string_view(kSglangStream).substr(0, cut));
    s.feed(std::string_view(kSglangStream).substr(cut));
    const TokenData d = s.finish();
    ASSERT_EQ(d.completion_ids, whole.completion_ids) << cut;
    ASSERT_EQ(d.prompt_ids, whole.prompt_ids) << cut;
    ASSERT_EQ(d.finish_reason, whole.finish_reason) << cut;
  }
  for (std::size_t cut = 1; cut < kVllm.size(); ++cut) {
    TokenScanner s(false, 1000);
    s.feed(std::string_view(kVllm).substr(0, cut));
    s.feed(std::string_view(kVllm).substr(cut));
    const TokenData d = s.finish();
    ASSERT_EQ(d.completion_ids, (Ids{7, 8})) << cut;
    ASSERT_EQ(d.completion_logprobs.size(), 2u) << cut;
  }
}

TEST(TokenScan, OnlyChoiceZero) {
  const TokenData d = scan(false, R"({"choices":[{"index":1,"token_ids":[99],"finish_reason":"x"},)"
                                  R"({"index":0,"token_ids":[1],"finish_reason":"stop"}]})");
  EXPECT_EQ(d.completion_ids, (Ids{1}));
  EXPECT_EQ(d.finish_reason, "stop");
}

TEST(TokenScan, TruncatedBodyKeepsWhatCameAndSaysSo) {
  const TokenData d = scan(false, kVllm.substr(0, kVllm.find("\"token_ids\"") + 15));
  EXPECT_EQ(d.prompt_ids, (Ids{1, 2, 3}));
  EXPECT_EQ(d.completion_ids, (Ids{7}));
  EXPECT_GE(d.malformed, 1u);  // the document did not end
}

TEST(TokenScan, HugeArrayIsBounded) {
  std::string body = R"({"prompt_token_ids":[)";
  for (int i = 0; i < 100'000; ++i) body += (i ? ",1" : "1");
  body += R"(],"choices":[{"index":0,"token_ids":[2,3]}]})";
  TokenScanner s(false, 500);
  s.feed(body);
  const TokenData d = s.finish();
  EXPECT_EQ(d.prompt_ids.size(), 500u);
  EXPECT_TRUE(d.completion_ids.empty());
  EXPECT_TRUE(d.truncated);
}

TEST(TokenScan, WrongTypesAreSkippedAndCounted) {
  const TokenData d = scan(
      false, R"({"prompt_token_ids":[1,"2",-3,4.5,4294967296,{"a":1},[7],true,null,5],)"
             R"("choices":[{"index":0,"token_ids":"nope","logprobs":{"token_logprobs":["x",-1]},)"
             R"("meta_info":{"output_token_logprobs":[[-0.5,"id",null],5,[-1,6]]}}],)"
             R"("usage":{"prompt_tokens":"many","completion_tokens":-1}})");
  EXPECT_EQ(d.prompt_ids, (Ids{1, 5}));
  EXPECT_EQ(d.completion_ids, (Ids{6}));
  ASSERT_EQ(d.completion_logprobs.size(), 1u);  // token_logprobs' -1 (OpenAI wins)
  EXPECT_FALSE(d.prompt_tokens.has_value());
  EXPECT_FALSE(d.completion_tokens.has_value());
  EXPECT_GE(d.malformed, 8u);
}

TEST(TokenScan, ArbitraryBytesNeverCrash) {
  const std::string junk[] = {"",
                              "{",
                              "}",
                              "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
                              "\"",
                              std::string(3, '\0'),
                              "data: {\"prompt_token_ids\":[1,2",
                              "data:\n\n\n",
                              "{\"choices\":[{\"index\":0,\"output_ids\":[1e400]}]}"};
  for (const auto& j : junk) {
    for (bool stream : {false, true}) {
      TokenScanner s(stream, 10);
      s.feed(j);
      s.feed(j);
      const TokenData d = s.finish();
      EXPECT_LE(d.prompt_ids.size() + d.completion_ids.size(), 10u);
    }
  }
  // Deeper than the parser's limit: an error, not a stack overflow.
  std::string deep(100'000, '[');
  TokenScanner s(false, 10);
  s.feed(deep);
  EXPECT_GE(s.finish().malformed, 1u);
}

TEST(TokenScan, UnfinishedStreamLineStillCounts) {
  // The stream ended without the blank line after its last event.
  const TokenData d = scan(true, "data: {\"choices\":[{\"index\":0,\"token_ids\":[3]}]}");
  EXPECT_EQ(d.completion_ids, (Ids{3}));
}

}  // namespace
}  // namespace toolbridge::llm
