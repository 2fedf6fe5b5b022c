#include "frontend/token_records_codec.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>

#include "frontend/batch_codec.h"

namespace toolbridge::frontend {
namespace {

namespace bj = boost::json;

llm::TokenRecords::Trajectory trajectory() {
  llm::TokenRecords::Trajectory t;
  llm::TokenRecord r;
  r.turn = 3;
  r.model = "m";
  r.worker = "w\"0";
  r.endpoint = "chat/completions";
  r.messages_hash = "sha256:00";
  r.stream = true;
  r.status = 200;
  r.tokens.prompt_ids = {1, 4294967295u};
  r.tokens.completion_ids = {7};
  r.tokens.completion_logprobs = {-0.5f, std::nanf("")};
  r.tokens.prompt_tokens = 2;
  r.tokens.shape = "vllm";
  t.records.push_back(r);
  r.turn = 4;
  r.tokens = {};
  t.records.push_back(r);
  t.turns_dropped = 3;
  t.bytes = 999;
  return t;
}

TEST(TokenRecordsCodec, MsgpackHoldsWhatJsonHolds) {
  const auto t = trajectory();
  const TokenRecordsView v{"traj", &t, true, 12.5};
  const bj::value json = bj::parse(token_records_json(v));
  const base::Expected<bj::value> decoded =
      decode_body(Encoding::kMsgpack, token_records_msgpack(v));
  ASSERT_TRUE(decoded) << decoded.error();
  const bj::value& packed = *decoded;
  const auto& calls = json.at("model_calls").as_array();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(json.at("turns_dropped"), 3);
  EXPECT_EQ(json.at("released"), true);
  const auto& first = calls[0].as_object();
  EXPECT_EQ(first.at("worker"), "w\"0");
  EXPECT_EQ(first.at("prompt_token_ids"), (bj::array{1, 4294967295u}));
  EXPECT_EQ(first.at("completion_logprobs").as_array()[1], nullptr);  // NaN: null
  EXPECT_EQ(first.at("usage"), (bj::object{{"prompt_tokens", 2}}));
  EXPECT_EQ(calls[1].at("shape"), nullptr);
  // Every key and value of the JSON answer, in MessagePack too (floats as 32-bit).
  const auto& pcalls = packed.at("model_calls").as_array();
  ASSERT_EQ(pcalls.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& j = calls[i].as_object();
    const auto& p = pcalls[i].as_object();
    ASSERT_EQ(j.size(), p.size()) << i;
    for (const auto& [key, value] : j) {
      ASSERT_TRUE(p.contains(key)) << key;
      if (key == "timings" || key == "completion_logprobs") continue;
      EXPECT_EQ(p.at(key), value) << key;
    }
  }
  EXPECT_DOUBLE_EQ(pcalls[0].at("completion_logprobs").as_array()[0].to_number<double>(), -0.5);
  EXPECT_EQ(pcalls[0].at("completion_logprobs").as_array()[1], nullptr);
  EXPECT_EQ(packed.as_object().size(), json.as_object().size());
}

}  // namespace
}  // namespace toolbridge::frontend
