#include "idempotency/ledger.h"

#include <gtest/gtest.h>

namespace toolbridge::idempotency {
namespace {

using call::Fault;
using call::Result;
using namespace std::chrono_literals;
using Claim = Ledger::Claim;

const base::Clock::time_point t0{std::chrono::hours(1)};

Result answered(std::string response) {
  Result r;
  r.response = std::move(response);
  return r;
}

TEST(Ledger, TheFirstCallRunsARetryWaitsThenGetsItsResult) {
  Ledger ledger({10min, 1u << 20, 100});
  auto first = ledger.claim("t\nk", "srv__run", R"({"code":"1"})", t0);
  ASSERT_EQ(first.claim, Claim::kStarted);
  EXPECT_EQ(ledger.claim("t\nk", "srv__run", R"({"code":"1"})", t0).claim, Claim::kRunning);
  ledger.finish("t\nk", first.entry, answered(R"({"id":1,"result":{}})"), t0 + 1s);
  const auto again = ledger.claim("t\nk", "srv__run", R"({"code":"1"})", t0 + 2s);
  ASSERT_EQ(again.claim, Claim::kDone);
  EXPECT_EQ(again.entry->result->response, R"({"id":1,"result":{}})");
  // Another trajectory's key of the same name is another call.
  EXPECT_EQ(ledger.claim("u\nk", "srv__run", R"({"code":"1"})", t0).claim, Claim::kStarted);
}

TEST(Ledger, TheSameKeyWithOtherArgumentsOrAnotherToolIsAMismatch) {
  Ledger ledger({10min, 1u << 20, 100});
  auto first = ledger.claim("t\nk", "srv__run", R"({"code":"1"})", t0);
  EXPECT_EQ(ledger.claim("t\nk", "srv__run", R"({"code":"2"})", t0).claim, Claim::kMismatch);
  EXPECT_EQ(ledger.claim("t\nk", "srv__other", R"({"code":"1"})", t0).claim, Claim::kMismatch);
  ledger.finish("t\nk", first.entry, answered("{}"), t0);
  EXPECT_EQ(ledger.claim("t\nk", "srv__run", R"({"code":"2"})", t0).claim, Claim::kMismatch);
}

TEST(Ledger, AResultIsKeptForTheTtlFromWhenItFinished) {
  Ledger ledger({10min, 1u << 20, 100});
  auto first = ledger.claim("t\nk", "a", "{}", t0);
  ledger.finish("t\nk", first.entry, answered("{}"), t0 + 5min);
  EXPECT_EQ(ledger.claim("t\nk", "a", "{}", t0 + 14min).claim, Claim::kDone);
  EXPECT_EQ(ledger.claim("t\nk", "a", "{}", t0 + 15min).claim, Claim::kStarted);
}

TEST(Ledger, ACallThatNeverReachedAServerFreesItsKey) {
  Ledger ledger({10min, 1u << 20, 100});
  for (Fault f : {Fault::kShed, Fault::kNotSent, Fault::kUnavailable, Fault::kOverloaded,
                  Fault::kShuttingDown, Fault::kCancelled}) {
    auto first = ledger.claim("t\nk", "a", "{}", t0);
    ASSERT_EQ(first.claim, Claim::kStarted) << call::to_string(f);
    ledger.finish("t\nk", first.entry, Result::failure(f, "no"), t0);
    EXPECT_TRUE(first.entry->done);  // its waiters get the failure
    EXPECT_EQ(ledger.keys(), 0u);
  }
  // A timeout or a crash may have run it: kept, a retry gets the same failure.
  for (Fault f : {Fault::kTimeout, Fault::kCrashed, Fault::kToolError, Fault::kServerError}) {
    const std::string scope = "t\n" + std::string(call::to_string(f));
    auto first = ledger.claim(scope, "a", "{}", t0);
    ledger.finish(scope, first.entry, Result::failure(f, "maybe ran"), t0);
    const auto again = ledger.claim(scope, "a", "{}", t0);
    ASSERT_EQ(again.claim, Claim::kDone) << call::to_string(f);
    EXPECT_EQ(again.entry->result->fault, f);
  }
}

TEST(Ledger, PastItsBytesTheLeastRecentlyFinishedGoFirst) {
  Ledger ledger({10min, 8u << 10, 100});
  const std::string big(3000, 'x');
  for (int i = 0; i < 5; ++i) {
    const std::string scope = "t\n" + std::to_string(i);
    auto e = ledger.claim(scope, "a", "{}", t0);
    ledger.finish(scope, e.entry, answered(big), t0 + std::chrono::seconds(i));
    EXPECT_LE(ledger.bytes(), 8u << 10);
  }
  EXPECT_EQ(ledger.keys(), 2u);
  EXPECT_EQ(ledger.claim("t\n4", "a", "{}", t0 + 10s).claim, Claim::kDone);
  EXPECT_EQ(ledger.claim("t\n0", "a", "{}", t0 + 10s).claim, Claim::kStarted);
}

TEST(Ledger, RunningCallsAreNeverDroppedANewKeyIsRefusedWhenAllRun) {
  Ledger ledger({10min, 1u << 20, 2});
  auto a = ledger.claim("t\na", "a", "{}", t0);
  auto b = ledger.claim("t\nb", "a", "{}", t0);
  EXPECT_EQ(ledger.claim("t\nc", "a", "{}", t0).claim, Claim::kFull);
  ledger.finish("t\na", a.entry, answered("{}"), t0);
  // A finished entry makes room.
  EXPECT_EQ(ledger.claim("t\nc", "a", "{}", t0).claim, Claim::kStarted);
  EXPECT_EQ(ledger.keys(), 2u);
  EXPECT_EQ(ledger.claim("t\nb", "a", "{}", t0).claim, Claim::kRunning);
}

}  // namespace
}  // namespace toolbridge::idempotency
