#include "repair/repair_stage.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "catalog/catalog.h"
#include "repair/answer.h"
#include "json/envelope.h"
#include "unit/stage_support.h"

namespace toolbridge::repair {
namespace {

namespace bj = boost::json;
using config::RepairMode;
using config::ValidateMode;

const char* kSchema = R"({"type": "object",
  "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
  "required": ["query"]})";

struct StageFixture {
  upstream::Catalog lists;
  catalog::Catalog catalog;
  config::Config config;
  telemetry::Metrics metrics;

  explicit StageFixture(config::RepairSettings settings = {}) {
    lists.tools.push_back(bj::object{{"name", "search"}, {"inputSchema", bj::parse(kSchema)}});
    catalog.rebuild(std::vector<catalog::Catalog::Source>{{"srv", &lists}},
                    config::ToolNaming::kPrefixed, "__");
    config::Server s;
    s.name = "srv";
    s.repair = std::move(settings);
    config.servers.push_back(s);
  }

  // A tools/call as resolve leaves it.
  call::Call call(const std::string& arguments, const std::string& meta_off = "") const {
    call::Call c;
    c.method = "tools/call";
    c.id = "9";
    c.params = R"({"name":"srv__search","arguments":)" + arguments + "}";
    c.members = *json::object_members(c.params);
    c.upstream_params = R"({"name":"search","arguments":)" + arguments + "}";
    c.route = call::Route{nullptr, "srv", "search", "srv__search", "srv__search"};
    if (!meta_off.empty()) c.slots.get<Request>().mode = meta_off;
    return c;
  }
  std::uint64_t counted(const std::string& metric, const std::string& labels) const {
    return metrics.counter(metric, labels);
  }
};

bj::value sent_arguments(const call::Call& c) {
  return bj::parse(c.upstream_params).at("arguments");
}

TEST(RepairStage, AValidCallIsPassedOnUntouched) {
  StageFixture f;
  RepairStage stage(catalog::schemas_of(f.catalog), f.config, f.metrics);
  call::Call c = f.call(R"({"query": "x", "limit": 3})");
  const std::string before = c.upstream_params;
  EXPECT_FALSE(stage.prepare(c));
  EXPECT_EQ(c.upstream_params, before);
  EXPECT_TRUE(c.repairs.empty());
}

TEST(RepairStage, ARepairedCallIsSentRepairedAndCounted) {
  StageFixture f;
  RepairStage stage(catalog::schemas_of(f.catalog), f.config, f.metrics);
  call::Call c = f.call(R"({"Query": "x", "limit": "3"})");
  EXPECT_FALSE(stage.prepare(c));
  EXPECT_EQ(sent_arguments(c), bj::parse(R"({"query": "x", "limit": 3})"));
  EXPECT_EQ(bj::parse(c.upstream_params).at("name"), "search");
  ASSERT_EQ(c.repairs.size(), 2u);
  EXPECT_EQ(f.counted("toolbridge_repairs_total",
                      telemetry::labels(
                          {{"server", "srv"}, {"tool", "srv__search"}, {"kind", "type_coerced"}})),
            1u);
}

TEST(RepairStage, MetaOffLeavesTheCallAsItCame) {
  StageFixture f;
  RepairStage stage(catalog::schemas_of(f.catalog), f.config, f.metrics);
  call::Call c = f.call(R"({"query": "x", "limit": "3"})", "off");
  const std::string before = c.upstream_params;
  EXPECT_FALSE(stage.prepare(c));  // warn: passed on
  EXPECT_EQ(c.upstream_params, before);
  EXPECT_EQ(
      f.counted("toolbridge_invalid_calls_total",
                telemetry::labels({{"server", "srv"}, {"tool", "srv__search"}, {"mode", "warn"}})),
      1u);
}

TEST(RepairStage, EnforceAnswersWithEveryViolationAndDoesNotPassOn) {
  config::RepairSettings s;
  s.validate = ValidateMode::kEnforce;
  StageFixture f(s);
  RepairStage stage(catalog::schemas_of(f.catalog), f.config, f.metrics);
  call::Call c = f.call(R"({"limit": "many"})");
  const auto answer = stage.prepare(c);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->fault, call::Fault::kInvalidCall);
  const bj::value v = bj::parse(answer->response);
  EXPECT_EQ(v.at("id"), 9);
  EXPECT_EQ(v.at("result").at("isError"), true);
  const std::string text(v.at("result").at("content").at(0).at("text").as_string());
  EXPECT_NE(text.find("/limit"), std::string::npos) << text;
  EXPECT_NE(text.find("integer"), std::string::npos) << text;
  EXPECT_NE(text.find("query"), std::string::npos) << text;
  EXPECT_NE(text.find("not run"), std::string::npos) << text;
}

TEST(RepairStage, EnforceRefusesArgumentsThatCannotBeMadeAnObject) {
  config::RepairSettings s;
  s.validate = ValidateMode::kEnforce;
  StageFixture f(s);
  RepairStage stage(catalog::schemas_of(f.catalog), f.config, f.metrics);
  call::Call c = f.call(R"("query = x")");
  ASSERT_TRUE(stage.prepare(c));
  call::Call ok = f.call(R"("{'query': 'x'}")");
  EXPECT_FALSE(stage.prepare(ok));
  EXPECT_EQ(sent_arguments(ok), bj::parse(R"({"query": "x"})"));
}

TEST(RepairStage, RepairOffStillValidates) {
  config::RepairSettings s;
  s.repair = RepairMode::kOff;
  s.validate = ValidateMode::kEnforce;
  StageFixture f(s);
  RepairStage stage(catalog::schemas_of(f.catalog), f.config, f.metrics);
  call::Call c = f.call(R"({"query": "x", "limit": "3"})");
  EXPECT_TRUE(stage.prepare(c));
}

TEST(RepairStage, RepairsAreSplicedIntoTheResultMeta) {
  StageFixture f;
  std::vector<std::unique_ptr<call::Stage>> chain;
  chain.push_back(
      std::make_unique<RepairStage>(catalog::schemas_of(f.catalog), f.config, f.metrics));
  auto last = std::make_unique<testing::ScriptedStage>();
  call::Result served;
  served.response = R"({"jsonrpc":"2.0","id":9,"result":{"content":[]}})";
  last->script.push_back(served);
  std::string seen;
  last->on_call = [&](call::Call& c) { seen = c.upstream_params; };
  chain.push_back(std::move(last));
  boost::asio::io_context io;
  call::Call c = f.call(R"({"query": "x", "limit": "3"})");
  const call::Result r = testing::run(io, call::Next(chain, 0)(c));
  EXPECT_EQ(bj::parse(seen).at("arguments"), bj::parse(R"({"query": "x", "limit": 3})"));
  const bj::value v = bj::parse(r.response);
  const auto& repairs = v.at("result").at("_meta").at("toolbridge/repairs").as_array();
  ASSERT_EQ(repairs.size(), 1u);
  EXPECT_EQ(repairs[0].at("kind"), "type_coerced");
  EXPECT_EQ(repairs[0].at("path"), "/limit");
}

}  // namespace
}  // namespace toolbridge::repair
