#pragma once
// The retry stage: a call whose instance died is sent again, within its deadline, after a
// jittered pause — but only if it never reached the server, or the config says the tool may
// run twice (idempotent_tools), and never for per_session servers (the state a call needs lived
// in the instance it lost).
#include <boost/asio/io_context.hpp>
#include <functional>

#include "base/clock.h"
#include "call/stage.h"

namespace toolbridge::policy {

class RetryStage final : public call::Stage {
 public:
  // `pause` is the wait before a retry (jittered, 50-150 ms by default).
  RetryStage(boost::asio::io_context& io, const base::Clock& clock, const bool& stopping,
             std::function<std::chrono::milliseconds()> pause = {});
  std::string_view name() const override { return "retry"; }
  bool applies(const call::Call& call) const override;
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next next) override;

  // May a call that failed with `result` be sent again? (Deadline and attempts aside.)
  static bool retryable(const call::Call& call, const call::Result& result);

 private:
  boost::asio::io_context& io_;
  const base::Clock& clock_;
  const bool& stopping_;
  std::function<std::chrono::milliseconds()> pause_;
};

}  // namespace toolbridge::policy
