#include "upstream/stateless.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>

namespace toolbridge::upstream {
namespace {

namespace bj = boost::json;

TEST(SupportsAfterRejection, AnUnsupportedVersionErrorListingTheRevisionIsWorthARetry) {
  EXPECT_TRUE(supports_after_rejection(
      bj::parse(R"({"code":-32022,"message":"Unsupported protocol version",)"
                R"("data":{"supported":["2026-07-28"],"requested":"2026-07-28"}})")));
}

TEST(SupportsAfterRejection, OtherErrorsAndOtherVersionsFallBackToTheHandshake) {
  // Another code, a list without our revision, no data, and values that are not errors at all.
  EXPECT_FALSE(supports_after_rejection(
      bj::parse(R"({"code":-32601,"data":{"supported":["2026-07-28"]}})")));
  EXPECT_FALSE(supports_after_rejection(
      bj::parse(R"({"code":-32022,"data":{"supported":["2025-11-25","2099-01-01"]}})")));
  EXPECT_FALSE(supports_after_rejection(bj::parse(R"({"code":-32022})")));
  EXPECT_FALSE(supports_after_rejection(bj::parse(R"({"code":-32022,"data":{"supported":"x"}})")));
  EXPECT_FALSE(supports_after_rejection(bj::parse(R"({"code":"-32022"})")));
  EXPECT_FALSE(supports_after_rejection(bj::parse("[]")));
  EXPECT_FALSE(supports_after_rejection(nullptr));
}

TEST(ToStateless, EveryRequestCarriesTheEnvelopeAndItsRoutingHeaders) {
  StatelessMessage m =
      to_stateless(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add",)"
                   R"("_meta":{"progressToken":1}}})");
  EXPECT_EQ(m.method, "tools/call");
  EXPECT_EQ(m.name, "add");
  const bj::object meta = bj::parse(m.body).at("params").at("_meta").as_object();
  EXPECT_EQ(meta.at("io.modelcontextprotocol/protocolVersion"), "2026-07-28");
  EXPECT_TRUE(meta.at("io.modelcontextprotocol/clientCapabilities").is_object());
  EXPECT_TRUE(meta.at("io.modelcontextprotocol/clientInfo").is_object());
  EXPECT_EQ(meta.at("progressToken"), 1);  // the caller's own keys stay

  // initialize is a request like any other here (the retried discover's fallback too).
  StatelessMessage init = to_stateless(R"({"jsonrpc":"2.0","id":1,"method":"initialize"})");
  EXPECT_TRUE(bj::parse(init.body).at("params").at("_meta").as_object().contains(
      "io.modelcontextprotocol/protocolVersion"));
}

TEST(ToStateless, ATaskAugmentedCallDeclaresTheTasksExtensionInsteadOfSendingTask) {
  // A server's own task (docs/tasks.md): params.task of 2025-11-25 is, here, the extension
  // declared in the envelope (SEP-2663), and the server never sees `task`.
  StatelessMessage call = to_stateless(
      R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","task":{"ttl":5}}})");
  const bj::object params = bj::parse(call.body).at("params").as_object();
  EXPECT_FALSE(params.contains("task"));
  const bj::object caps =
      params.at("_meta").at("io.modelcontextprotocol/clientCapabilities").as_object();
  EXPECT_TRUE(caps.at("extensions").as_object().contains("io.modelcontextprotocol/tasks"));
  // An ordinary call declares no extension: the server must not answer it with a task.
  StatelessMessage plain =
      to_stateless(R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t"}})");
  EXPECT_FALSE(bj::parse(plain.body)
                   .at("params")
                   .at("_meta")
                   .at("io.modelcontextprotocol/clientCapabilities")
                   .as_object()
                   .contains("extensions"));
  // tasks/get and tasks/cancel declare it and name their task in Mcp-Name.
  for (const char* method : {"tasks/get", "tasks/cancel"}) {
    StatelessMessage m = to_stateless(std::string(R"({"jsonrpc":"2.0","id":5,"method":")") +
                                      method + R"(","params":{"taskId":"srv-1"}})");
    EXPECT_EQ(m.name, "srv-1") << method;
    EXPECT_TRUE(bj::parse(m.body)
                    .at("params")
                    .at("_meta")
                    .at("io.modelcontextprotocol/clientCapabilities")
                    .at("extensions")
                    .as_object()
                    .contains("io.modelcontextprotocol/tasks"))
        << method;
  }
}

TEST(HeaderMarks, LearntFromToolsListAndSentAsMcpParamHeaders) {
  HeaderMarks marks;
  learn_header_marks(R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":)"
                     R"({"type":"object","properties":{"region":{"type":"string",)"
                     R"("x-mcp-header":"Region"},"n":{"type":"number","x-mcp-header":"N"},)"
                     R"("bad":{"x-mcp-header":"a b"},"plain":{"type":"string"}}}}]}})",
                     marks);
  ASSERT_EQ(marks.count("t"), 1u);
  EXPECT_EQ(marks.at("t").size(), 2u);  // "a b" is no header name
  std::vector<std::pair<std::string, std::string>> headers;
  add_param_headers(headers,
                    R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t",)"
                    R"("arguments":{"region":"Zürich","n":3,"plain":"x"}}})",
                    "t", marks);
  std::map<std::string, std::string> got(headers.begin(), headers.end());
  EXPECT_EQ(got.size(), 2u);
  EXPECT_EQ(got["Mcp-Param-N"], "3");
  EXPECT_EQ(got["Mcp-Param-Region"], "=?base64?WsO8cmljaA==?=");  // not ASCII: Base64
  headers.clear();
  add_param_headers(headers, R"({"params":{"arguments":{"region":"x"}}})", "other", marks);
  EXPECT_TRUE(headers.empty());
}

TEST(HeaderMarks, ParamHeaderValue) {
  EXPECT_EQ(param_header_value(bj::value("us-west")), "us-west");
  EXPECT_EQ(param_header_value(bj::value(" x")), "=?base64?IHg=?=");  // an edge space
  EXPECT_EQ(param_header_value(bj::value(true)), "true");
  EXPECT_FALSE(param_header_value(bj::value(bj::object{})));
}

}  // namespace
}  // namespace toolbridge::upstream
