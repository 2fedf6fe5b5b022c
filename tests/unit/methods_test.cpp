#include "gateway/methods.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "stage_support.h"

namespace toolbridge::gateway {
namespace {

namespace bj = boost::json;

Call call_of(std::string method) {
  Call c;
  c.method = std::move(method);
  c.id = "\"abc\"";
  return c;
}

TEST(ToJsonRpc, AServerAnswerIsSentAsItCame) {
  Result r;
  r.response = R"({"jsonrpc":"2.0","id":"abc","result":{}})";
  EXPECT_EQ(to_jsonrpc(call_of("tools/call"), r), r.response);
}

TEST(ToJsonRpc, AToolCallsTimeoutCrashOrOutageIsAToolResultWithIsError) {
  for (Fault f : {Fault::kTimeout, Fault::kCrashed, Fault::kNotSent, Fault::kUnavailable,
                  Fault::kShed}) {
    const bj::value v =
        bj::parse(to_jsonrpc(call_of("tools/call"), Result::failure(f, "it broke")));
    EXPECT_EQ(v.at("id"), "abc");
    EXPECT_EQ(v.at("result").at("isError"), true) << to_string(f);
    EXPECT_EQ(v.at("result").at("content").at(0).at("text"), "it broke");
  }
}

TEST(ToJsonRpc, OtherFaultsAndOtherMethodsAreJsonRpcErrorsWithTheirCodes) {
  const bj::value unknown = bj::parse(to_jsonrpc(
      call_of("tools/call"), Result::failure(Fault::kInvalidParams, "Unknown tool: 'x'")));
  EXPECT_EQ(unknown.at("error").at("code"), -32602);
  EXPECT_EQ(unknown.at("error").at("message"), "Unknown tool: 'x'");
  const bj::value timeout =
      bj::parse(to_jsonrpc(call_of("resources/read"), Result::failure(Fault::kTimeout, "slow")));
  EXPECT_EQ(timeout.at("error").at("code"), json::kRequestTimeout);
  const bj::value overloaded =
      bj::parse(to_jsonrpc(call_of("tools/call"), Result::failure(Fault::kOverloaded, "busy")));
  EXPECT_EQ(overloaded.at("error").at("code"), json::kOverloaded);
  const bj::value shed =
      bj::parse(to_jsonrpc(call_of("resources/read"), Result::failure(Fault::kShed, "queued")));
  EXPECT_EQ(shed.at("error").at("code"), json::kOverloaded);
  const bj::value stopping = bj::parse(
      to_jsonrpc(call_of("tools/call"), Result::failure(Fault::kShuttingDown, "stopping")));
  EXPECT_EQ(stopping.at("error").at("code"), json::kUpstreamUnavailable);
}

TEST(ToJsonRpc, AServersErrorPrefixMarksOnlyTheGatewaysOwnToolErrors) {
  config::Server server;
  server.error_prefix = "[toolbridge error] ";
  testing::Routed routed(server);
  const Call call = routed.call();
  const bj::value timeout =
      bj::parse(to_jsonrpc(call, Result::failure(Fault::kTimeout, "srv__t timed out")));
  EXPECT_EQ(timeout.at("result").at("content").at(0).at("text"),
            "[toolbridge error] srv__t timed out");
  // The server's own isError result and JSON-RPC errors are passed on as they are.
  Result own;
  own.fault = Fault::kToolError;
  own.response = R"({"jsonrpc":"2.0","id":7,"result":{"isError":true,"content":[]}})";
  EXPECT_EQ(to_jsonrpc(call, own), own.response);
  const bj::value busy = bj::parse(to_jsonrpc(call, Result::failure(Fault::kOverloaded, "busy")));
  EXPECT_EQ(busy.at("error").at("message"), "busy");
}

}  // namespace
}  // namespace toolbridge::gateway
