#include "gateway/measure.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <memory>
#include <vector>

#include "unit/stage_support.h"

namespace toolbridge::gateway {
namespace {

namespace bj = boost::json;
using namespace std::chrono_literals;

// The wall-clock time of a call's record is when it started, though the stage reads the system
// clock only once a second.
TEST(MeasureStage, ARecordsTimeIsWhenItsCallStarted) {
  boost::asio::io_context io;
  telemetry::Metrics metrics;
  telemetry::CallLog log;
  std::vector<std::unique_ptr<call::Stage>> chain;
  chain.push_back(
      std::make_unique<MeasureStage>(metrics, log, nullptr, toolbridge::base::steady_clock()));
  chain.push_back(std::make_unique<testing::ScriptedStage>());
  for (const auto ago : {2000ms, 30ms, 5000ms}) {
    call::Call call;
    call.method = "tools/call";
    call.trajectory = "t1";
    call.route.server = "srv";
    call.route.label = "srv__t";
    call.started = toolbridge::base::steady_clock().now() - ago;
    testing::run(io, call::Next(chain, 0)(call));
    const auto expected = std::chrono::duration_cast<std::chrono::milliseconds>(
                              (std::chrono::system_clock::now() - ago).time_since_epoch())
                              .count();
    const bj::value kept =
        bj::parse(log.trajectory_json("t1", toolbridge::base::steady_clock().now()));
    const bj::array& calls = kept.at("calls").as_array();
    const std::int64_t time_ms = calls.back().at("time_ms").to_number<std::int64_t>();
    EXPECT_NEAR(static_cast<double>(time_ms), static_cast<double>(expected), 200.0) << ago.count();
  }
}

}  // namespace
}  // namespace toolbridge::gateway
