#include "catalog/resolve.h"

#include <gtest/gtest.h>

#include "stage_support.h"

namespace toolbridge::catalog {
namespace {

using call::Fault;
using call::Result;

call::Call tool_call(std::string name, std::chrono::milliseconds requested = {}) {
  call::Call c;
  c.method = "tools/call";
  c.id = "1";
  c.params = R"({"name":")" + name + R"(","arguments":{}})";
  c.members = *json::object_members(c.params);
  c.requested_timeout = requested;
  return c;
}

struct ResolveWithoutCatalog {
  explicit ResolveWithoutCatalog(config::Server server) : routed(std::move(server)) {
    upstreams.push_back(routed.up);
  }
  Result run(call::Call& call) {
    ResolveStage stage(catalog, upstreams, stopping, "__");
    std::vector<std::unique_ptr<call::Stage>> rest;
    auto end = std::make_unique<testing::ScriptedStage>();
    const testing::ScriptedStage* seen = end.get();
    rest.push_back(std::move(end));
    Result r = testing::run(routed.io, stage.handle(call, call::Next(rest, 0)));
    sent = seen->attempts_seen.size();
    return r;
  }
  testing::Routed routed;
  std::vector<std::shared_ptr<upstream::Upstream>> upstreams;
  Catalog catalog;
  bool stopping = false;
  std::size_t sent = 0;
};

TEST(Resolve, ANameOfNoConfiguredServerIsAnUnknownTool) {
  ResolveWithoutCatalog r({});
  call::Call call = tool_call("other__tool");
  const Result result = r.run(call);
  EXPECT_EQ(result.fault, Fault::kInvalidParams);
  EXPECT_NE(result.why.find("Unknown tool: 'other__tool'"), std::string::npos) << result.why;
}

TEST(Resolve, AToolOfADisabledServerSaysSoNotUnknownTool) {
  config::Server server;
  server.enabled = false;
  server.error_prefix = "[tb] ";
  ResolveWithoutCatalog r(server);
  call::Call call = tool_call("srv__anything");
  const Result result = r.run(call);
  EXPECT_EQ(result.fault, Fault::kUnavailable);
  EXPECT_EQ(result.why, "server 'srv' is disabled in the configuration");
  EXPECT_EQ(r.sent, 0u);
  // Routed to the server, so its error_prefix marks the tool result.
  ASSERT_TRUE(call.route.upstream);
  EXPECT_EQ(call.route.server, "srv");
}

TEST(Resolve, AToolOfAServerStillStartingWaitsWithinTheCallsBudget) {
  // Never started: the server is "starting" and has listed nothing. The call waits its budget
  // (1 ms here), then says the server is starting and how long it waited.
  ResolveWithoutCatalog r({});
  call::Call call = tool_call("srv__tool", std::chrono::milliseconds(1));
  const Result result = r.run(call);
  EXPECT_EQ(result.fault, Fault::kTimeout);
  EXPECT_NE(result.why.find("server 'srv' is starting"), std::string::npos) << result.why;
  EXPECT_NE(result.why.find("waited 0.001 s"), std::string::npos) << result.why;
  EXPECT_EQ(r.sent, 0u);
}

}  // namespace
}  // namespace toolbridge::catalog
