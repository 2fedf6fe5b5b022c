#include "upstream/start_gate.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <vector>

namespace toolbridge::upstream {
namespace {

namespace asio = boost::asio;

// The waiters hold timers that never expire, so io.run() would not return: poll() runs what is
// ready and comes back.

TEST(StartGate, AdmitsUpToTheLimitThenHandsEachPermitToTheNextWaiterInOrder) {
  asio::io_context io;
  StartGate gate(2);
  std::vector<int> admitted;
  for (int i = 0; i < 4; ++i) {
    asio::co_spawn(
        io,
        [&, i]() -> asio::awaitable<void> {
          co_await gate.acquire();
          admitted.push_back(i);
        },
        asio::detached);
  }
  io.poll();
  EXPECT_EQ(admitted, (std::vector<int>{0, 1}));
  gate.release();
  io.restart();
  io.poll();
  EXPECT_EQ(admitted, (std::vector<int>{0, 1, 2}));
  gate.release();
  io.restart();
  io.poll();
  EXPECT_EQ(admitted, (std::vector<int>{0, 1, 2, 3}));
}

TEST(StartGate, ALimitOfZeroStillAdmitsOne) {
  asio::io_context io;
  StartGate gate(0);
  int admitted = 0;
  for (int i = 0; i < 2; ++i) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await gate.acquire();
          ++admitted;
        },
        asio::detached);
  }
  io.poll();
  EXPECT_EQ(admitted, 1);
  gate.release();
  io.restart();
  io.poll();
  EXPECT_EQ(admitted, 2);
}

}  // namespace
}  // namespace toolbridge::upstream
