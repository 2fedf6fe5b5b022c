#pragma once
// The deadline stage: gives a call its deadline once (the server's call_timeout, a tool's own
// timeout, shortened — never lengthened — by the caller's toolbridge/timeout_ms), and refuses an
// attempt whose deadline has already passed. Later stages spend only what is left.
#include "base/clock.h"
#include "call/stage.h"

namespace toolbridge::policy {

// The budget of a call to `server`'s tool `tool` (the server's own name; empty for non-tool
// methods) when the caller asked for `requested` (0: nothing asked).
std::chrono::milliseconds call_budget(const config::Server& server, const std::string& tool,
                                      std::chrono::milliseconds requested);

class DeadlineStage final : public gateway::Stage {
 public:
  explicit DeadlineStage(const base::Clock& clock) : clock_(clock) {}
  std::string_view name() const override { return "deadline"; }
  boost::asio::awaitable<gateway::Result> handle(gateway::Call& call, gateway::Next next) override;

 private:
  const base::Clock& clock_;
};

}  // namespace toolbridge::policy
