// base::log_failure: a coroutine started on its own that throws is logged with its name; one that
// ends normally, or returns a value, logs nothing.
#include "base/spawn.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace asio = boost::asio;
using toolbridge::base::log_failure;

namespace {

// Routes the default logger to a string for the test's life.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("captured", sink));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

asio::awaitable<void> throws() {
  throw std::runtime_error("the pipe broke");
  co_return;
}
asio::awaitable<void> ends() { co_return; }
asio::awaitable<int> returns() { co_return 7; }

}  // namespace

TEST(LogFailure, AThrowingCoroutineIsLoggedWithItsName) {
  CapturedLog log;
  asio::io_context io;
  asio::co_spawn(io, throws(), log_failure("stdio read loop"));
  io.run();
  EXPECT_NE(log.text().find("stdio read loop ended with an exception: the pipe broke"),
            std::string::npos)
      << log.text();
}

TEST(LogFailure, ACoroutineThatEndsOrReturnsLogsNothing) {
  CapturedLog log;
  asio::io_context io;
  asio::co_spawn(io, ends(), log_failure("ends"));
  asio::co_spawn(io, returns(), log_failure("returns"));
  io.run();
  EXPECT_EQ(log.text(), "");
}
