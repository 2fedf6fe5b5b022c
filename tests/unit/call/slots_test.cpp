#include "call/slots.h"

#include <gtest/gtest.h>

#include <string>

#include "call/call.h"

namespace toolbridge::call {
namespace {

struct CacheWord {
  std::string mode;
  int max_age = -1;
};
struct RepairWord {
  std::string mode;
};

TEST(Slots, AStageFindsOnlyWhatItsOwnTypeHolds) {
  Slots slots;
  EXPECT_EQ(slots.find<CacheWord>(), nullptr) << "no slot until a stage makes one";
  slots.get<CacheWord>().mode = "bypass";
  EXPECT_EQ(slots.find<RepairWord>(), nullptr) << "one type's slot is not another's";
  slots.get<RepairWord>().mode = "off";
  ASSERT_NE(slots.find<CacheWord>(), nullptr);
  EXPECT_EQ(slots.find<CacheWord>()->mode, "bypass");
  EXPECT_EQ(slots.find<CacheWord>()->max_age, -1) << "a new slot starts value-initialised";
  // get() of a slot that exists is that slot, not a new one.
  slots.get<CacheWord>().max_age = 5;
  EXPECT_EQ(slots.find<CacheWord>()->max_age, 5);
  EXPECT_EQ(slots.find<RepairWord>()->mode, "off");
}

TEST(Slots, ACopiedCallHasItsOwnSlots) {
  // The idempotency stage runs its own copy of a call: the copy's slots must not be the
  // original's.
  Call call;
  call.slots.get<CacheWord>().mode = "refresh";
  Call copy = call;
  ASSERT_NE(copy.slots.find<CacheWord>(), nullptr);
  EXPECT_EQ(copy.slots.find<CacheWord>()->mode, "refresh");
  EXPECT_NE(copy.slots.find<CacheWord>(), call.slots.find<CacheWord>());
  copy.slots.get<CacheWord>().mode = "bypass";
  EXPECT_EQ(call.slots.find<CacheWord>()->mode, "refresh");

  Call assigned;
  assigned.slots.get<RepairWord>().mode = "safe";
  assigned = copy;
  EXPECT_EQ(assigned.slots.find<RepairWord>(), nullptr) << "assignment replaces every slot";
  EXPECT_EQ(assigned.slots.find<CacheWord>()->mode, "bypass");

  Call moved = std::move(copy);
  EXPECT_EQ(moved.slots.find<CacheWord>()->mode, "bypass");
}

}  // namespace
}  // namespace toolbridge::call
