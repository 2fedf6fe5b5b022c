#include "gateway/methods.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "stage_support.h"

namespace toolbridge::gateway {
namespace {

namespace bj = boost::json;

call::Call call_of(std::string method) {
  call::Call c;
  c.method = std::move(method);
  c.id = "\"abc\"";
  return c;
}

TEST(ToJsonRpc, AServerAnswerIsSentAsItCame) {
  call::Result r;
  r.response = R"({"jsonrpc":"2.0","id":"abc","result":{}})";
  EXPECT_EQ(to_jsonrpc(call_of("tools/call"), r), r.response);
}

TEST(ToJsonRpc, AToolCallsTimeoutCrashOrOutageIsAToolResultWithIsError) {
  for (call::Fault f : {call::Fault::kTimeout, call::Fault::kCrashed, call::Fault::kNotSent,
                        call::Fault::kUnavailable, call::Fault::kShed}) {
    const bj::value v =
        bj::parse(to_jsonrpc(call_of("tools/call"), call::Result::failure(f, "it broke")));
    EXPECT_EQ(v.at("id"), "abc");
    EXPECT_EQ(v.at("result").at("isError"), true) << to_string(f);
    EXPECT_EQ(v.at("result").at("content").at(0).at("text"), "it broke");
  }
}

TEST(ToJsonRpc, OtherFaultsAndOtherMethodsAreJsonRpcErrorsWithTheirCodes) {
  const bj::value unknown =
      bj::parse(to_jsonrpc(call_of("tools/call"), call::Result::failure(call::Fault::kInvalidParams,
                                                                        "Unknown tool: 'x'")));
  EXPECT_EQ(unknown.at("error").at("code"), -32602);
  EXPECT_EQ(unknown.at("error").at("message"), "Unknown tool: 'x'");
  const bj::value timeout = bj::parse(
      to_jsonrpc(call_of("resources/read"), call::Result::failure(call::Fault::kTimeout, "slow")));
  EXPECT_EQ(timeout.at("error").at("code"), json::kRequestTimeout);
  const bj::value overloaded = bj::parse(
      to_jsonrpc(call_of("tools/call"), call::Result::failure(call::Fault::kOverloaded, "busy")));
  EXPECT_EQ(overloaded.at("error").at("code"), json::kOverloaded);
  const bj::value shed = bj::parse(
      to_jsonrpc(call_of("resources/read"), call::Result::failure(call::Fault::kShed, "queued")));
  EXPECT_EQ(shed.at("error").at("code"), json::kOverloaded);
  const bj::value stopping = bj::parse(to_jsonrpc(
      call_of("tools/call"), call::Result::failure(call::Fault::kShuttingDown, "stopping")));
  EXPECT_EQ(stopping.at("error").at("code"), json::kUpstreamUnavailable);
}

TEST(ToJsonRpc, AServersErrorPrefixMarksOnlyTheGatewaysOwnToolErrors) {
  config::Server server;
  server.error_prefix = "[toolbridge error] ";
  testing::Routed routed(server);
  const call::Call call = routed.call();
  const bj::value timeout =
      bj::parse(to_jsonrpc(call, call::Result::failure(call::Fault::kTimeout, "srv__t timed out")));
  EXPECT_EQ(timeout.at("result").at("content").at(0).at("text"),
            "[toolbridge error] srv__t timed out");
  // The server's own isError result and JSON-RPC errors are passed on as they are.
  call::Result own;
  own.fault = call::Fault::kToolError;
  own.response = R"({"jsonrpc":"2.0","id":7,"result":{"isError":true,"content":[]}})";
  EXPECT_EQ(to_jsonrpc(call, own),
            R"({"jsonrpc":"2.0","id":7,"result":{"isError":true,"content":[],)"
            R"("_meta":{"toolbridge/fault":"tool"}}})");
  const bj::value busy =
      bj::parse(to_jsonrpc(call, call::Result::failure(call::Fault::kOverloaded, "busy")));
  EXPECT_EQ(busy.at("error").at("message"), "busy");
}

TEST(ToJsonRpc, AFailedToolCallNamesItsFaultClassInMeta) {
  const auto fault_of_result = [](call::Result r) {
    const bj::value v = bj::parse(to_jsonrpc(call_of("tools/call"), std::move(r)));
    return v.at("result").at("_meta").at("toolbridge/fault");
  };
  EXPECT_EQ(fault_of_result(call::Result::failure(call::Fault::kTimeout, "slow")), "infra");
  EXPECT_EQ(fault_of_result(call::Result::failure(call::Fault::kShed, "full")), "infra");
  call::Result own;  // the server's isError result keeps its own _meta members
  own.fault = call::Fault::kToolError;
  own.response = R"({"jsonrpc":"2.0","id":"abc","result":{"isError":true,"_meta":{"k":1}}})";
  const bj::value tool = bj::parse(to_jsonrpc(call_of("tools/call"), own));
  EXPECT_EQ(tool.at("result").at("_meta").at("k"), 1);
  EXPECT_EQ(tool.at("result").at("_meta").at("toolbridge/fault"), "tool");
  // JSON-RPC errors carry it in error.data.
  const bj::value unknown =
      bj::parse(to_jsonrpc(call_of("tools/call"), call::Result::failure(call::Fault::kInvalidParams,
                                                                        "Unknown tool: 'x'")));
  EXPECT_EQ(unknown.at("error").at("data").at("toolbridge/fault"), "agent");
  call::Result server_error;
  server_error.fault = call::Fault::kServerError;
  server_error.response = R"({"jsonrpc":"2.0","id":"abc","error":{"code":-1,"message":"no"}})";
  const bj::value own_error = bj::parse(to_jsonrpc(call_of("tools/call"), server_error));
  EXPECT_EQ(own_error.at("error").at("data").at("toolbridge/fault"), "tool");
  // Not for a call that succeeded, nor for other methods.
  call::Result ok;
  ok.response = R"({"jsonrpc":"2.0","id":"abc","result":{"content":[]}})";
  EXPECT_EQ(to_jsonrpc(call_of("tools/call"), ok), ok.response);
  const bj::value read = bj::parse(
      to_jsonrpc(call_of("resources/read"), call::Result::failure(call::Fault::kTimeout, "slow")));
  EXPECT_FALSE(read.at("error").as_object().contains("data"));
}

}  // namespace
}  // namespace toolbridge::gateway
