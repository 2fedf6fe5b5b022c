// A call made through a tool surface names it and its fingerprint in its trace line and its
// trajectory-view record; a call without one carries neither key.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "telemetry/call_log.h"

namespace toolbridge::telemetry {
namespace {

TEST(CallRecordSurface, WrittenOnlyWhenTheCallHadOne) {
  CallRecord r;
  r.tool = "fixture__echo";
  r.outcome = "ok";
  const boost::json::object plain = boost::json::parse(r.json()).as_object();
  EXPECT_FALSE(plain.contains("surface"));
  EXPECT_FALSE(plain.contains("surface_fingerprint"));
  const std::size_t before = r.bytes();
  r.surface = "bench-a-long-surface-name";
  r.surface_fingerprint = "9e3c973a67d3d7ce";
  const boost::json::object surfaced = boost::json::parse(r.json()).as_object();
  EXPECT_EQ(surfaced.at("surface").as_string(), "bench-a-long-surface-name");
  EXPECT_EQ(surfaced.at("surface_fingerprint").as_string(), "9e3c973a67d3d7ce");
  EXPECT_GT(r.bytes(), before);  // the call log's bound counts them
}

}  // namespace
}  // namespace toolbridge::telemetry
