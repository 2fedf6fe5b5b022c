#include "base/held_bytes.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

namespace toolbridge::base {
namespace {

namespace asio = boost::asio;

// A reader that waits at the gate, then counts what it would have read.
asio::awaitable<void> reader(HeldBytes& gate, int& reads) {
  co_await gate.until_under();
  ++reads;
}

TEST(HeldBytes, ReadersWaitWhileOverTheBoundAndResumeWhenBackUnder) {
  asio::io_context io;
  HeldBytes gate;
  gate.set_limit(100);
  gate.add(100);  // at the bound is not over it
  int reads = 0;
  asio::co_spawn(io, reader(gate, reads), asio::detached);
  io.poll();
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(gate.waits(), 0u);

  gate.add(1);
  EXPECT_TRUE(gate.over());
  asio::co_spawn(io, reader(gate, reads), asio::detached);
  asio::co_spawn(io, reader(gate, reads), asio::detached);
  io.restart();
  io.poll();
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(gate.waits(), 2u);
  gate.add(50);
  gate.remove(50);  // still over: nobody resumes
  io.restart();
  io.poll();
  EXPECT_EQ(reads, 1);
  gate.remove(1);
  io.restart();
  io.poll();
  EXPECT_EQ(reads, 3);
  EXPECT_EQ(gate.held(), 100u);
}

TEST(HeldBytes, RaisingTheLimitOpensTheGateAndNoLimitNeverCloses) {
  asio::io_context io;
  HeldBytes gate;
  gate.add(1000);
  EXPECT_FALSE(gate.over());  // no limit set
  gate.set_limit(10);
  int reads = 0;
  asio::co_spawn(io, reader(gate, reads), asio::detached);
  io.poll();
  EXPECT_EQ(reads, 0);
  gate.set_limit(2000);
  io.restart();
  io.poll();
  EXPECT_EQ(reads, 1);
  gate.remove(5000);  // more than held: clamps at 0
  EXPECT_EQ(gate.held(), 0u);
}

TEST(HeldBytes, AWaiterDestroyedWithItsIoContextUnregisters) {
  HeldBytes gate;
  gate.set_limit(1);
  gate.add(2);
  int reads = 0;
  {
    asio::io_context io;
    asio::co_spawn(io, reader(gate, reads), asio::detached);
    io.poll();
  }                // the waiting coroutine's frame is destroyed here
  gate.remove(2);  // must not touch the destroyed waiter
  EXPECT_EQ(reads, 0);
}

}  // namespace
}  // namespace toolbridge::base
