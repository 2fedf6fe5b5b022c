#include "gateway/dispatch.h"

#include <gtest/gtest.h>

namespace toolbridge::gateway {
namespace {

TEST(ClassifyResponse, AResultIsOkAndKeepsTheServersBytes) {
  const std::string msg =
      R"({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}})";
  const Result r = classify_response(msg);
  EXPECT_EQ(r.fault, Fault::kNone);
  EXPECT_EQ(r.response, msg);
}

TEST(ClassifyResponse, IsErrorTrueAtEitherEndIsAToolError) {
  EXPECT_EQ(
      classify_response(R"({"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}})").fault,
      Fault::kToolError);
  EXPECT_EQ(classify_response(R"({"jsonrpc":"2.0","id":1,"result":{"isError": true,"content":[]}})")
                .fault,
            Fault::kToolError);
  EXPECT_EQ(classify_response(R"({"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}})")
                .fault,
            Fault::kNone);
}

TEST(ClassifyResponse, TheGatewaysOwnErrorCodesBecomeFaultsWithTheirMessage) {
  const std::pair<int, Fault> cases[] = {{json::kRequestTimeout, Fault::kTimeout},
                                         {json::kUpstreamFailed, Fault::kCrashed},
                                         {json::kNotSent, Fault::kNotSent},
                                         {json::kUpstreamUnavailable, Fault::kUnavailable},
                                         {json::kOverloaded, Fault::kOverloaded}};
  for (const auto& [code, fault] : cases) {
    const Result r = classify_response(json::make_error("3", code, "why " + std::to_string(code)));
    EXPECT_EQ(r.fault, fault) << code;
    EXPECT_EQ(r.why, "why " + std::to_string(code));
    EXPECT_TRUE(r.response.empty()) << "each front end renders the gateway's faults itself";
  }
}

TEST(ClassifyResponse, AServersOwnJsonRpcErrorPassesThrough) {
  const std::string msg = json::make_error("3", -32602, "bad argument");
  const Result r = classify_response(msg);
  EXPECT_EQ(r.fault, Fault::kServerError);
  EXPECT_EQ(r.why, "bad argument");
  EXPECT_EQ(r.response, msg);
}

}  // namespace
}  // namespace toolbridge::gateway
