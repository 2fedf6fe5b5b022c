#include "tasks/store.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace toolbridge::tasks {
namespace {

using namespace std::chrono_literals;

struct FakeRun : Run {
  int cancels = 0;
  std::string why;
  boost::json::object provided;
  void cancel(const std::string& w) override {
    ++cancels;
    why = w;
  }
  std::string still_pending = "{}";
  std::string provide(const boost::json::object& r) override {
    provided = r;
    return still_pending;
  }
};

Limits limits(std::size_t per_owner = 3, std::size_t bytes = 100,
              std::chrono::milliseconds ttl = std::chrono::seconds(60)) {
  return Limits{ttl, per_owner, bytes};
}

TEST(TaskStore, IdsAreUnguessableAndTasksBelongToTheirOwner) {
  base::ManualClock clock;
  Store store(limits(), clock);
  Task* a = *store.create("alice", nullptr);
  Task* b = *store.create("alice", nullptr);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->id.size(), 32u);
  EXPECT_NE(a->id, b->id);
  EXPECT_EQ(store.find(a->id, "alice"), a);
  EXPECT_EQ(store.find(a->id, "bob"), nullptr);  // another tenant: as if it did not exist
  EXPECT_EQ(store.find("nope", "alice"), nullptr);
  EXPECT_EQ(a->status, Status::kWorking);
}

TEST(TaskStore, LifecycleAndTerminalStatesAreSticky) {
  base::ManualClock clock;
  Store store(limits(), clock);
  auto run = std::make_shared<FakeRun>();
  Task* t = *store.create("o", run);
  const std::string id = t->id;
  store.input_required(id, R"({"k":{"method":"elicitation/create"}})");
  EXPECT_EQ(t->status, Status::kInputRequired);
  EXPECT_GT(store.bytes(), 0u);
  store.working(id);
  EXPECT_EQ(t->status, Status::kWorking);
  EXPECT_EQ(store.bytes(), 0u);
  store.complete(id, R"({"content":[]})");
  EXPECT_EQ(t->status, Status::kCompleted);
  EXPECT_EQ(t->result, R"({"content":[]})");
  EXPECT_EQ(t->run, nullptr);
  store.fail(id, R"({"code":1,"message":"late"})");  // a late outcome changes nothing
  store.cancel(*t, "late");
  EXPECT_EQ(t->status, Status::kCompleted);
  EXPECT_EQ(run->cancels, 0);
}

TEST(TaskStore, UpdateKeepsInputRequiredUntilEveryRequestIsAnswered) {
  base::ManualClock clock;
  Store store(limits(), clock);
  auto run = std::make_shared<FakeRun>();
  Task* t = *store.create("o", run);
  store.input_required(t->id, R"({"a":{},"b":{}})");
  run->still_pending = R"({"b":{}})";
  store.provide(*t, boost::json::object{{"a", boost::json::object{}}});
  EXPECT_TRUE(run->provided.contains("a"));
  EXPECT_EQ(t->status, Status::kInputRequired);
  EXPECT_EQ(t->input_requests, R"({"b":{}})");
  run->still_pending = "{}";
  store.provide(*t, boost::json::object{{"b", boost::json::object{}}});
  EXPECT_EQ(t->status, Status::kWorking);
  EXPECT_TRUE(t->input_requests.empty());
}

TEST(TaskStore, CancelStopsTheRunOnce) {
  base::ManualClock clock;
  Store store(limits(), clock);
  auto run = std::make_shared<FakeRun>();
  Task* t = *store.create("o", run);
  store.cancel(*t, "asked");
  store.cancel(*t, "again");
  EXPECT_EQ(t->status, Status::kCancelled);
  EXPECT_EQ(run->cancels, 1);
  EXPECT_EQ(run->why, "asked");
  store.complete(t->id, "{}");  // the call's result after the cancel is dropped
  EXPECT_EQ(t->status, Status::kCancelled);
}

TEST(TaskStore, PerOwnerLimitRefusesOnlyWhenAllAreRunning) {
  base::ManualClock clock;
  Store store(limits(2), clock);
  Task* first = *store.create("o", std::make_shared<FakeRun>());
  const std::string first_id = first->id;
  ASSERT_TRUE(store.create("o", std::make_shared<FakeRun>()));
  const base::Expected<Task*> refused = store.create("o", nullptr);
  EXPECT_FALSE(refused);
  EXPECT_NE(refused.error().find("gateway.task_max_per_tenant"), std::string::npos)
      << refused.error();
  EXPECT_TRUE(store.create("other", nullptr));  // another tenant has its own count
  store.complete(first_id, "{}");
  EXPECT_TRUE(store.create("o", nullptr));  // the finished one gives way
  EXPECT_EQ(store.find(first_id, "o"), nullptr);
}

TEST(TaskStore, RoomForSaysWhatCreateWouldAnswerWithoutCreating) {
  base::ManualClock clock;
  Store store(limits(2), clock);
  EXPECT_TRUE(store.room_for("o"));
  Task* first = *store.create("o", std::make_shared<FakeRun>());
  const std::string first_id = first->id;
  EXPECT_TRUE(store.room_for("o"));
  ASSERT_TRUE(store.create("o", std::make_shared<FakeRun>()));
  const base::Status full = store.room_for("o");
  EXPECT_FALSE(full);
  EXPECT_EQ(full.error(), store.create("o", nullptr).error());  // the same words
  EXPECT_NE(full.error().find("gateway.task_max_per_tenant"), std::string::npos) << full.error();
  EXPECT_TRUE(store.room_for("other"));
  EXPECT_EQ(store.size(), 2u);  // asking made nothing and dropped nothing
  store.complete(first_id, "{}");
  EXPECT_TRUE(store.room_for("o"));  // a finished one would give way
  EXPECT_NE(store.find(first_id, "o"), nullptr);
}

TEST(TaskStore, ResultsBeyondTheByteBudgetEvictOldFinishedOnesOrFail) {
  base::ManualClock clock;
  Store store(limits(10, 100), clock);
  Task* a = *store.create("o", nullptr);
  const std::string a_id = a->id;
  store.complete(a_id, std::string(60, 'a'));
  clock.advance(1ms);
  Task* b = *store.create("o", nullptr);
  const std::string b_id = b->id;
  store.complete(b_id, std::string(60, 'b'));  // a is dropped to make room
  EXPECT_EQ(store.find(a_id, "o"), nullptr);
  ASSERT_NE(store.find(b_id, "o"), nullptr);
  EXPECT_EQ(store.bytes(), 60u);
  Task* c = *store.create("o", nullptr);
  store.complete(c->id, std::string(101, 'c'));  // can never fit
  EXPECT_EQ(c->status, Status::kFailed);
  EXPECT_NE(c->error.find("gateway.task_max_bytes"), std::string::npos) << c->error;
  EXPECT_TRUE(c->result.empty());
}

TEST(TaskStore, TasksExpireAfterTheirTtlAndRunningOnesAreCancelled) {
  base::ManualClock clock;
  Store store(limits(10, 100, 10s), clock);
  auto run = std::make_shared<FakeRun>();
  Task* t = *store.create("o", run);
  const std::string id = t->id;
  clock.advance(9s);
  EXPECT_NE(store.find(id, "o"), nullptr);  // never before its ttl
  clock.advance(1s);
  EXPECT_EQ(store.find(id, "o"), nullptr);
  EXPECT_EQ(run->cancels, 1);
  EXPECT_NE(run->why.find("gateway.task_ttl"), std::string::npos);
  EXPECT_EQ(store.size(), 0u);
}

TEST(TaskStore, ProgressIsTheStatusMessageOfARunningTaskOnly) {
  base::ManualClock clock;
  Store store(limits(), clock);
  Task* t = *store.create("o", std::make_shared<FakeRun>());
  const std::string id = t->id;
  store.progress(id, "step 1");
  EXPECT_EQ(t->status_message, "step 1");
  // Bounded, cut at a character boundary ("é" is two bytes; 511 'a' and one "é" straddle 512).
  store.progress(id, std::string(511, 'a') + "\xc3\xa9" + "tail");
  EXPECT_EQ(t->status_message, std::string(511, 'a'));
  store.complete(id, "{}");
  EXPECT_TRUE(t->status_message.empty());
  store.progress(id, "late");
  EXPECT_TRUE(t->status_message.empty());
}

TEST(TaskStore, CancelRunningCancelsEveryRunningTaskAndTellsOnChange) {
  base::ManualClock clock;
  Store store(limits(), clock);
  auto a = std::make_shared<FakeRun>();
  auto b = std::make_shared<FakeRun>();
  Task* ta = *store.create("o", a);
  clock.advance(1s);
  Task* tb = *store.create("p", b);
  clock.advance(1s);
  Task* done = *store.create("o", std::make_shared<FakeRun>());
  store.complete(done->id, "{}");
  std::vector<std::string> changed;
  store.on_change = [&changed](const Task& t) {
    changed.push_back(t.id + ":" + std::string(to_string(t.status)));
  };
  store.cancel_running("the gateway is stopping");
  EXPECT_EQ(a->cancels, 1);
  EXPECT_EQ(b->why, "the gateway is stopping");
  EXPECT_EQ(ta->status, Status::kCancelled);
  EXPECT_EQ(tb->status, Status::kCancelled);
  EXPECT_EQ(done->status, Status::kCompleted);
  EXPECT_EQ(changed.size(), 2u);
  EXPECT_EQ(store.running(), 0u);
  // of_owner: the owner's tasks only, oldest first.
  const auto mine = store.of_owner("o");
  ASSERT_EQ(mine.size(), 2u);
  EXPECT_EQ(mine[0], ta);
  EXPECT_EQ(mine[1], done);
}

TEST(TaskStore, Iso8601) {
  const auto t =
      std::chrono::system_clock::time_point(std::chrono::milliseconds(1'700'000'000'123));
  EXPECT_EQ(iso8601(t), "2023-11-14T22:13:20.123Z");
}

}  // namespace
}  // namespace toolbridge::tasks
