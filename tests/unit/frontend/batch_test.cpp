#include "frontend/batch.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "frontend/batch_codec.h"
#include "json/parse.h"

namespace toolbridge::frontend {
namespace {

namespace bj = boost::json;
using gateway::Fault;
using gateway::Result;

BatchRefusal read(std::string_view text, BatchRequest& out) {
  boost::system::error_code ec;
  const bj::value v = json::parse(text, ec);
  EXPECT_FALSE(ec) << text;
  return read_batch_request(v, out);
}

TEST(BatchRequest, ReadsEveryField) {
  BatchRequest r;
  const BatchRefusal refusal = read(
      R"({"calls":[{"tool":"a__b","arguments":{"x":1},"timeout_ms":250},{"tool":"c__d"}],
          "trajectory":"t-1","tenant":"run-a","mode":"fail_fast","sequential":true,
          "timeout_ms":1000})",
      r);
  ASSERT_TRUE(refusal.empty()) << refusal.message;
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].tool, "a__b");
  EXPECT_EQ(r.calls[0].arguments, R"({"x":1})");
  EXPECT_EQ(r.calls[0].timeout.count(), 250);
  EXPECT_EQ(r.calls[1].arguments, "{}");
  EXPECT_EQ(r.calls[1].timeout.count(), 0);
  EXPECT_EQ(r.trajectory, "t-1");
  EXPECT_EQ(r.tenant, "run-a");
  EXPECT_TRUE(r.fail_fast);
  EXPECT_TRUE(r.sequential);
  EXPECT_EQ(r.timeout.count(), 1000);
}

TEST(BatchRequest, AMalformedCallIsAnErrorEntryNotARefusal) {
  BatchRequest r;
  const BatchRefusal refusal = read(
      R"({"calls":[3,{"tool":""},{"tool":"a","arguments":[1]},{"tool":"a","x":1},
          {"tool":"a","timeout_ms":0},{"tool":"a","arguments":null},{"arguments":{}}]})",
      r);
  ASSERT_TRUE(refusal.empty()) << refusal.message;
  ASSERT_EQ(r.calls.size(), 7u);
  EXPECT_EQ(r.calls[0].error, R"(calls[0] must be an object {"tool": NAME, "arguments": {...}})");
  EXPECT_EQ(r.calls[1].error,
            "calls[1].tool must be a non-empty string (the tool's name, server__tool)");
  EXPECT_EQ(r.calls[2].error, "calls[2].arguments must be an object");
  EXPECT_EQ(r.calls[3].error, "calls[3]: unknown key 'x' (a call has tool, arguments, timeout_ms)");
  EXPECT_NE(r.calls[4].error.find("calls[4].timeout_ms must be more than 0"), std::string::npos);
  EXPECT_TRUE(r.calls[5].error.empty()) << "null arguments mean {}";
  EXPECT_EQ(r.calls[6].error, "calls[6].tool is missing (the tool's name, server__tool)");
}

TEST(BatchRequest, TheRequestsOwnFaultsAreRefusedWithTheirStatus) {
  struct Case {
    const char* body;
    int status;
    const char* message_part;
  };
  const Case cases[] = {
      {"[]", 400, "the body must be an object"},
      {"{}", 400, "calls is missing"},
      {R"({"calls":[]})", 400, "calls is empty"},
      {R"({"calls":"x"})", 400, "calls must be an array"},
      {R"({"calls":[{"tool":"a"}],"mode":"fast"})", 400, "mode must be"},
      {R"({"calls":[{"tool":"a"}],"sequential":1})", 400, "sequential must be true or false"},
      {R"({"calls":[{"tool":"a"}],"tenant":"a b"})", 400, "tenant must be 1-128 characters"},
      {R"({"calls":[{"tool":"a"}],"trajectory":"/x"})", 400, "trajectory: character 1"},
      {R"({"calls":[{"tool":"a"}],"timeout_ms":"5"})", 400, "timeout_ms must be a number"},
      {R"({"calls":[{"tool":"a"}],"timeout_ms":1e12})", 400, "at most 2592000000"},
      {R"({"calls":[{"tool":"a"}],"other":1})", 400, "unknown key 'other'"},
  };
  for (const Case& c : cases) {
    BatchRequest r;
    const BatchRefusal refusal = read(c.body, r);
    EXPECT_EQ(refusal.status, c.status) << c.body;
    EXPECT_NE(refusal.message.find(c.message_part), std::string::npos)
        << c.body << ": " << refusal.message;
  }
}

TEST(BatchRequest, MoreCallsThanTheLimitIs413) {
  std::string body = R"({"calls":[)";
  for (std::size_t i = 0; i <= kMaxBatchCalls; ++i)
    body += std::string(i ? "," : "") + R"({"tool":"a"})";
  body += "]}";
  BatchRequest r;
  const BatchRefusal refusal = read(body, r);
  EXPECT_EQ(refusal.status, 413);
  EXPECT_EQ(refusal.code, "too_many_calls");
  EXPECT_EQ(refusal.message, "a batch carries at most 256 calls; this one has 257: split it");
}

TEST(BatchCodec, EncodingByContentType) {
  EXPECT_EQ(encoding_of(""), Encoding::kJson);
  EXPECT_EQ(encoding_of("application/json; charset=utf-8"), Encoding::kJson);
  EXPECT_EQ(encoding_of("application/msgpack"), Encoding::kMsgpack);
  EXPECT_EQ(encoding_of("application/x-msgpack"), Encoding::kMsgpack);
  EXPECT_EQ(encoding_of("application/vnd.msgpack"), Encoding::kMsgpack);
  EXPECT_EQ(encoding_of("text/plain"), Encoding::kUnsupported);
}

std::vector<BatchEntry> sample_entries() {
  std::vector<BatchEntry> e(4);
  e[0].tool = "a__ok";
  e[0].result =
      Result{Fault::kNone,
             R"({"jsonrpc":"2.0","id":0,"result":{"content":[{"type":"text","text":"hi"}]}})",
             {}};
  e[1].tool = "a__err";
  e[1].result =
      Result{Fault::kServerError,
             R"({"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"boom"}})", "boom"};
  e[2].tool = "a__late";
  e[2].result = Result::failure(Fault::kTimeout, "a__late timed out \"quoted\"");
  e[3].tool = "a__shed";
  e[3].result = Result::failure(Fault::kShed, "a is overloaded");
  // Not whole numbers: msgpack-cxx packs a double with an integral value as an integer.
  for (auto& x : e) {
    x.queue_ms = 0.5;
    x.execution_ms = 1.25;
    x.total_ms = 1.75;
  }
  return e;
}

TEST(BatchCodec, JsonSplicesServerAnswersAndNamesGatewayFaults) {
  const std::string out = encode_response(Encoding::kJson, sample_entries(), 2.5);
  boost::system::error_code ec;
  const bj::value v = json::parse(out, ec);
  ASSERT_FALSE(ec) << out;
  const auto& results = v.at("results").as_array();
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].at("outcome"), "ok");
  EXPECT_EQ(results[0].at("result").at("content").at(0).at("text"), "hi");
  EXPECT_EQ(results[0].at("timing").at("execution_ms").as_double(), 1.25);
  EXPECT_EQ(results[1].at("outcome"), "server_error");
  EXPECT_EQ(results[1].at("error").at("code").as_int64(), -32000);
  EXPECT_EQ(results[2].at("outcome"), "timeout");
  EXPECT_EQ(results[2].at("error").at("message"), "a__late timed out \"quoted\"");
  EXPECT_EQ(results[3].at("outcome"), "shed");
  EXPECT_EQ(v.at("timing").at("total_ms").as_double(), 2.5);
}

TEST(BatchCodec, MsgpackRoundTripsToTheSameDocumentAsJson) {
  const std::string json_out = encode_response(Encoding::kJson, sample_entries(), 2.5);
  const std::string packed = encode_response(Encoding::kMsgpack, sample_entries(), 2.5);
  std::string problem;
  const bj::value from_msgpack = decode_body(Encoding::kMsgpack, packed, problem);
  ASSERT_TRUE(problem.empty()) << problem;
  boost::system::error_code ec;
  EXPECT_EQ(from_msgpack, json::parse(json_out, ec));
}

TEST(BatchCodec, MsgpackBodiesThatCannotBeJsonAreRefused) {
  std::string problem;
  // fixarray of one bin8 value.
  decode_body(Encoding::kMsgpack, std::string("\x91\xc4\x01x", 4), problem);
  EXPECT_NE(problem.find("binary values are not accepted"), std::string::npos) << problem;
  problem.clear();
  decode_body(Encoding::kMsgpack, std::string(200, '\x91') + "\xc0", problem);
  EXPECT_NE(problem.find("nested deeper than 128"), std::string::npos) << problem;
  problem.clear();
  decode_body(Encoding::kMsgpack, "\xc0\xc0", problem);
  EXPECT_NE(problem.find("bytes follow it"), std::string::npos) << problem;
  problem.clear();
  // A truncated map: every prefix of a valid body is refused, never crashes.
  const std::string packed = encode_response(Encoding::kMsgpack, sample_entries(), 2.5);
  for (std::size_t n = 0; n < packed.size(); ++n) {
    problem.clear();
    decode_body(Encoding::kMsgpack, std::string_view(packed).substr(0, n), problem);
    EXPECT_FALSE(problem.empty()) << "prefix of " << n << " bytes";
  }
}

}  // namespace
}  // namespace toolbridge::frontend
