#include "mcp/revision.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>
#include <string>

namespace toolbridge::mcp {
namespace {

namespace bj = boost::json;

// Headers as a test writes them; a name listed twice appears twice.
struct Headers {
  std::multimap<std::string, std::string> values;
  HeaderView view() const {
    return {[this](std::string_view name) -> std::optional<std::string_view> {
              auto it = values.find(std::string(name));
              if (it == values.end()) return std::nullopt;
              return std::string_view(it->second);
            },
            [this](std::string_view name) { return values.count(std::string(name)); }};
  }
};

bj::object request(std::string_view method, bj::object params) {
  return bj::object{
      {"jsonrpc", "2.0"}, {"id", 1}, {"method", method}, {"params", std::move(params)}};
}

bj::object meta(std::string_view version = kStatelessVersion) {
  return bj::object{{kVersionMeta, version},
                    {kCapabilitiesMeta, bj::object{{"elicitation", bj::object{}}}}};
}

Headers headers(std::string_view method, std::string_view version = kStatelessVersion) {
  Headers h;
  h.values.emplace("MCP-Protocol-Version", std::string(version));
  h.values.emplace("Mcp-Method", std::string(method));
  return h;
}

TEST(Revision, AcceptsAWellFormedRequestAndReadsItsCapabilities) {
  StatelessEnvelope env;
  bj::object m = meta();
  m[kLogLevelMeta] = "debug";
  const auto rejection =
      classify(request("tools/list", bj::object{{"_meta", m}}), headers("tools/list").view(), env);
  EXPECT_FALSE(rejection.has_value()) << rejection->message;
  EXPECT_EQ(env.version, kStatelessVersion);
  EXPECT_TRUE(env.elicitation);
  EXPECT_FALSE(env.sampling);
  EXPECT_FALSE(env.roots);
  EXPECT_EQ(env.log_level, "debug");
}

TEST(Revision, MissingMetaOrEnvelopeKeysAreInvalidParams) {
  StatelessEnvelope env;
  auto r = classify(request("server/discover", {}), headers("server/discover").view(), env);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, -32602);
  bj::object only_version{{kVersionMeta, kStatelessVersion}};
  r = classify(request("server/discover", bj::object{{"_meta", only_version}}),
               headers("server/discover").view(), env);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, -32602);
  EXPECT_NE(r->message.find(std::string(kCapabilitiesMeta)), std::string::npos) << r->message;
}

TEST(Revision, HeadersThatDisagreeWithTheBodyAreHeaderMismatch) {
  StatelessEnvelope env;
  const bj::object body = request("tools/list", bj::object{{"_meta", meta()}});
  auto r = classify(body, headers("prompts/list").view(), env);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, kHeaderMismatch);
  Headers no_method;
  no_method.values.emplace("MCP-Protocol-Version", std::string(kStatelessVersion));
  r = classify(body, no_method.view(), env);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, kHeaderMismatch);
  // The version header names another version than the body: a mismatch, not "unsupported".
  r = classify(request("tools/list", bj::object{{"_meta", meta("v999")}}),
               headers("tools/list").view(), env);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, kHeaderMismatch);
  Headers twice = headers("tools/list");
  twice.values.emplace("Mcp-Method", "tools/list");
  r = classify(body, twice.view(), env);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, kHeaderMismatch);
  EXPECT_NE(r->message.find("more than once"), std::string::npos);
}

TEST(Revision, McpNameMustMatchTheNamedParamPlainOrBase64) {
  StatelessEnvelope env;
  const bj::object body =
      request("tools/call", bj::object{{"_meta", meta()}, {"name", "echo"}, {"arguments", {}}});
  Headers h = headers("tools/call");
  EXPECT_TRUE(classify(body, h.view(), env)) << "no Mcp-Name";
  h.values.emplace("Mcp-Name", "other");
  EXPECT_EQ(classify(body, h.view(), env)->code, kHeaderMismatch);
  h.values.erase("Mcp-Name");
  h.values.emplace("Mcp-Name", "echo");
  EXPECT_FALSE(classify(body, h.view(), env));
  h.values.erase("Mcp-Name");
  h.values.emplace("Mcp-Name", "=?base64?ZWNobw==?=");  // "echo"
  EXPECT_FALSE(classify(body, h.view(), env));
  const bj::object read =
      request("resources/read", bj::object{{"_meta", meta()}, {"uri", "test://x"}});
  Headers rh = headers("resources/read");
  rh.values.emplace("Mcp-Name", "test://x");
  EXPECT_FALSE(classify(read, rh.view(), env));
}

TEST(Revision, AnUnservedVersionNamesTheSupportedOnes) {
  StatelessEnvelope env;
  const auto r = classify(request("server/discover", bj::object{{"_meta", meta("v999.0.0")}}),
                          headers("server/discover", "v999.0.0").view(), env);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, kUnsupportedProtocolVersion);
  const bj::value data = bj::parse(r->data);
  EXPECT_EQ(data.at("supported").as_array().at(0).as_string(), kStatelessVersion);
  EXPECT_EQ(data.at("requested").as_string(), "v999.0.0");
}

TEST(Revision, Base64HeaderValuesDecodeOnlyWhenCanonical) {
  EXPECT_EQ(decode_header_value("plain"), "plain");
  EXPECT_EQ(decode_header_value("=?base64?w6k=?="), "\xc3\xa9");
  EXPECT_FALSE(decode_header_value("=?base64?w6k?="));   // missing padding
  EXPECT_FALSE(decode_header_value("=?base64?!!!!?="));  // not base64
  EXPECT_FALSE(decode_header_value("=?base64?w6l=?="));  // non-zero trailing bits
}

TEST(Revision, ErrorCodesMapToHttpStatuses) {
  EXPECT_EQ(http_status_for(-32700), 400);
  EXPECT_EQ(http_status_for(-32602), 400);
  EXPECT_EQ(http_status_for(kHeaderMismatch), 400);
  EXPECT_EQ(http_status_for(kMissingClientCapability), 400);
  EXPECT_EQ(http_status_for(kUnsupportedProtocolVersion), 400);
  EXPECT_EQ(http_status_for(-32601), 404);
  EXPECT_EQ(http_status_for(-32603), 200);
  EXPECT_EQ(http_status_for(0), 200);
}

}  // namespace
}  // namespace toolbridge::mcp
