#include "upstream/stateless.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

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

}  // namespace
}  // namespace toolbridge::upstream
