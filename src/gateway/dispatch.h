#pragma once
// The last stage: placement picks the instance (the server's sharing policy; a call may wait
// for one to start), the instance rewrites the id and sends the request, and the answer comes
// back as a Result. Events the server sends meanwhile go to the call's Events.
#include <boost/asio/io_context.hpp>

#include "base/clock.h"
#include "call/stage.h"

namespace toolbridge::gateway {

// A server's response (already carrying the caller's id) as a Result: an error is the server's
// own (kServerError), a tool result with "isError": true a kToolError. The gateway's failures
// never come this way: the instance gives them typed (upstream::CallSink::on_failure).
call::Result classify_response(std::string response);
// The same for a response the instance scanned already.
call::Result classify_response(std::string response, const upstream::Scanned& scanned);

class DispatchStage final : public call::Stage {
 public:
  DispatchStage(boost::asio::io_context& io, const base::Clock& clock, const bool& stopping)
      : io_(io), clock_(clock), stopping_(stopping) {}
  std::string_view name() const override { return "dispatch"; }
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next next) override;

 private:
  // Waits (within the deadline and checkout_timeout) for an instance that is starting for the
  // call; a retry keeps asking until the deadline while a restart is under way.
  boost::asio::awaitable<call::Result> wait_and_send(call::Call& call, std::string error,
                                                     bool wait);
  boost::asio::awaitable<call::Result> send(call::Call& call,
                                            std::shared_ptr<upstream::Instance> instance,
                                            bool waited);

  boost::asio::io_context& io_;
  const base::Clock& clock_;
  const bool& stopping_;
};

}  // namespace toolbridge::gateway
