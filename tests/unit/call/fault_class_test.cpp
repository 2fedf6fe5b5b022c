#include <gtest/gtest.h>

#include <map>

#include "call/call.h"

namespace toolbridge::call {
namespace {

// The table of docs/faults.md: a change here is a change of what trainers mask.
TEST(FaultClass, EveryFaultMapsToItsDocumentedClass) {
  const std::map<Fault, std::string_view> documented = {
      {Fault::kNone, "ok"},
      {Fault::kInvalidParams, "agent"},
      {Fault::kInvalidCall, "agent"},
      {Fault::kNotFound, "agent"},
      {Fault::kForbidden, "agent"},
      {Fault::kToolError, "tool"},
      {Fault::kServerError, "tool"},
      {Fault::kUnavailable, "infra"},
      {Fault::kOverloaded, "infra"},
      {Fault::kShed, "infra"},
      {Fault::kTimeout, "infra"},
      {Fault::kCrashed, "infra"},
      {Fault::kNotSent, "infra"},
      {Fault::kCancelled, "infra"},
      {Fault::kShuttingDown, "infra"},
  };
  ASSERT_EQ(documented.size(), kFaultCount) << "a fault without a documented class";
  for (const auto& [fault, label] : documented) {
    EXPECT_EQ(to_string(fault_class(fault)), label) << to_string(fault);
  }
}

TEST(FaultClass, AGatewayWrittenIsErrorIsCountedAsToolErrorButIsTheAgents) {
  EXPECT_EQ(outcome_label(Fault::kInvalidCall), "tool_error");
  EXPECT_EQ(to_string(Fault::kInvalidCall), "invalid_call");
  EXPECT_EQ(fault_class(Fault::kInvalidCall), FaultClass::kAgent);
}

}  // namespace
}  // namespace toolbridge::call
