#pragma once
// Test support for pipeline stages: run an awaitable to completion, a scripted last stage, and a
// configured (never started) upstream to route calls to.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "call/stage.h"
#include "telemetry/metrics.h"
#include "upstream/upstream.h"

namespace toolbridge::testing {

template <class T>
T run(boost::asio::io_context& io, boost::asio::awaitable<T> work) {
  auto future = boost::asio::co_spawn(io, std::move(work), boost::asio::use_future);
  io.restart();
  io.run();
  return future.get();
}

// The end of a chain: answers from a script, counting what it saw.
class ScriptedStage final : public call::Stage {
 public:
  std::deque<call::Result> script;
  std::vector<int> attempts_seen;
  std::function<void(call::Call&)> on_call;
  std::string_view name() const override { return "scripted"; }
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next) override {
    attempts_seen.push_back(call.attempts);
    if (on_call) on_call(call);
    ++call.sends;
    call::Result r = script.empty() ? call::Result{} : std::move(script.front());
    if (!script.empty()) script.pop_front();
    co_return r;
  }
};

struct Routed {
  boost::asio::io_context io;
  telemetry::Metrics metrics;
  upstream::StartGate gate{1};
  std::shared_ptr<upstream::Upstream> up;

  explicit Routed(config::Server server) {
    if (server.name.empty()) server.name = "srv";
    if (server.command.empty()) server.command = "/bin/true";
    up = std::make_shared<upstream::Upstream>(io, server, gate, metrics);
  }
  // A call routed as the resolve stage routes it, its deadline counted from `started` (a front
  // end takes it from the gateway's clock; a test on a ManualClock passes its clock's now()).
  call::Call call(std::string tool = "t",
                  base::Clock::time_point started = base::steady_clock().now()) const {
    call::Call c;
    c.started = started;
    c.method = "tools/call";
    c.id = "7";
    c.set_route(call::Route{up, up->name(), tool, "srv__" + tool, "srv__" + tool});
    return c;
  }
};

}  // namespace toolbridge::testing
