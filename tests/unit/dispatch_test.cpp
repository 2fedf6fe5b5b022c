#include "gateway/dispatch.h"

#include <gtest/gtest.h>

namespace toolbridge::gateway {
namespace {

TEST(ClassifyResponse, AResultIsOkAndKeepsTheServersBytes) {
  const std::string msg =
      R"({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}})";
  const call::Result r = classify_response(msg);
  EXPECT_EQ(r.fault, call::Fault::kNone);
  EXPECT_EQ(r.response, msg);
}

TEST(ClassifyResponse, IsErrorTrueAnywhereAtTheResultsTopLevelIsAToolError) {
  EXPECT_EQ(
      classify_response(R"({"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}})").fault,
      call::Fault::kToolError);
  EXPECT_EQ(classify_response(R"({"jsonrpc":"2.0","id":1,"result":{"isError": true,"content":[]}})")
                .fault,
            call::Fault::kToolError);
  EXPECT_EQ(classify_response(R"({"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}})")
                .fault,
            call::Fault::kNone);
  // Between two long members, where a look at the first and last bytes would not see it.
  const std::string text(4096, 'x');
  EXPECT_EQ(classify_response(
                R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":")" + text +
                R"("}],"isError":true,"structuredContent":{"t":")" + text + R"("}}})")
                .fault,
            call::Fault::kToolError);
}

TEST(ClassifyResponse, IsErrorOnlyCountsAsTheResultsOwnMember) {
  // Inside a text, or a member of a nested object, it is the tool's data, not its verdict.
  EXPECT_EQ(
      classify_response(
          R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"isError\":true"}]}})")
          .fault,
      call::Fault::kNone);
  EXPECT_EQ(
      classify_response(
          R"({"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"isError":true},"content":[]}})")
          .fault,
      call::Fault::kNone);
  EXPECT_EQ(classify_response(R"({"jsonrpc":"2.0","id":1,"result":{"isError":"true"}})").fault,
            call::Fault::kNone);
  // The member's name may be escaped; the last one written counts.
  EXPECT_EQ(classify_response(R"({"jsonrpc":"2.0","id":1,"result":{"is\u0045rror":true}})").fault,
            call::Fault::kToolError);
  EXPECT_EQ(
      classify_response(R"({"jsonrpc":"2.0","id":1,"result":{"isError":true,"isError":false}})")
          .fault,
      call::Fault::kNone);
}

TEST(ClassifyResponse, ErrorsInTheGatewaysOwnCodesFromAServerAreStillTheServers) {
  // The gateway's failures come typed from the instance; a server that writes the same codes
  // answered itself, and its answer passes through.
  for (const int code : {json::kRequestTimeout, json::kUpstreamFailed, json::kNotSent,
                         json::kUpstreamUnavailable, json::kOverloaded}) {
    const std::string msg = json::make_error("3", code, "why " + std::to_string(code));
    const call::Result r = classify_response(msg);
    EXPECT_EQ(r.fault, call::Fault::kServerError) << code;
    EXPECT_EQ(r.why, "why " + std::to_string(code));
    EXPECT_EQ(r.response, msg);
  }
}

TEST(ClassifyResponse, AServersOwnJsonRpcErrorPassesThrough) {
  const std::string msg = json::make_error("3", -32602, "bad argument");
  const call::Result r = classify_response(msg);
  EXPECT_EQ(r.fault, call::Fault::kServerError);
  EXPECT_EQ(r.why, "bad argument");
  EXPECT_EQ(r.response, msg);
}

}  // namespace
}  // namespace toolbridge::gateway
