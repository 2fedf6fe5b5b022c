#include "load.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace toolbridge::bench {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr auto kCallTimeout = 60s;

// A one-shot event for coroutines on one thread: wait() returns once set() has been called.
class Event {
 public:
  explicit Event(asio::any_io_executor ex) : timer_(std::move(ex), asio::steady_timer::time_point::max()) {}
  void set() {
    set_ = true;
    timer_.cancel();
  }
  asio::awaitable<void> wait() {
    while (!set_) {
      boost::system::error_code ec;
      co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }

 private:
  asio::steady_timer timer_;
  bool set_ = false;
};

struct Run {
  explicit Run(asio::any_io_executor ex) : all_ready(ex), go(ex), all_measured(ex), may_close(ex), all_closed(ex) {}
  Event all_ready, go, all_measured, may_close, all_closed;
  std::size_t ready = 0, measured = 0, closed = 0, workers = 0;
  Clock::time_point start, deadline;
  double rate = 0;
  std::uint64_t started = 0;
  std::uint64_t max_calls = 0;
  LoadResult result;

  void note_error(const std::string& e) {
    if (result.first_error.empty()) result.first_error = e;
  }
};

asio::awaitable<void> worker(Target& target, Run& run, std::size_t index, std::size_t warmup) {
  std::string err = co_await target.open(index);
  const bool opened = err.empty();
  if (!opened) {
    ++run.result.errors;
    ++run.result.setup_errors;
    run.note_error("worker " + std::to_string(index) + " could not start: " + err);
  }
  for (std::size_t i = 0; opened && i < warmup; ++i) {
    std::string e = co_await target.call(index);
    if (!e.empty()) {
      ++run.result.errors;
      ++run.result.setup_errors;
      run.note_error("warm-up call failed: " + e);
    }
  }
  if (++run.ready == run.workers) run.all_ready.set();
  co_await run.go.wait();

  auto ex = co_await asio::this_coro::executor;
  asio::steady_timer pacer(ex);
  while (opened) {
    if (run.max_calls != 0 && run.started >= run.max_calls) break;
    auto t0 = Clock::now();
    if (run.rate > 0) {
      const auto due = run.start + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(static_cast<double>(run.started) / run.rate));
      if (due >= run.deadline) break;
      ++run.started;
      if (due > t0) {
        pacer.expires_at(due);
        boost::system::error_code ec;
        co_await pacer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      }
      t0 = due;  // late or not, the call was due then
    } else {
      if (t0 >= run.deadline) break;
      ++run.started;
    }
    std::string e = co_await target.call(index);
    const auto t1 = Clock::now();
    ++run.result.calls;
    if (e.empty()) {
      run.result.latency.add(std::chrono::duration<double, std::micro>(t1 - t0).count());
    } else {
      ++run.result.errors;
      run.note_error(e);
    }
  }
  if (++run.measured == run.workers) run.all_measured.set();
  co_await run.may_close.wait();
  if (opened) co_await target.close(index);
  if (++run.closed == run.workers) run.all_closed.set();
}

}  // namespace

asio::awaitable<LoadResult> run_closed_loop(Target& target, LoadPlan plan, std::function<void()> on_window_open,
                                            std::function<void()> on_window_close) {
  auto ex = co_await asio::this_coro::executor;
  Run run(ex);
  run.workers = std::max<std::size_t>(1, plan.concurrency);
  run.max_calls = plan.max_calls;
  run.rate = plan.rate;
  run.result.latency.reserve(plan.max_calls ? plan.max_calls : 100'000);
  for (std::size_t i = 0; i < run.workers; ++i) {
    asio::co_spawn(ex, worker(target, run, i, plan.warmup_calls), asio::detached);
  }
  co_await run.all_ready.wait();
  if (on_window_open) on_window_open();
  const auto start = Clock::now();
  run.start = start;
  run.deadline = start + plan.duration;
  run.go.set();
  co_await run.all_measured.wait();
  const auto end = Clock::now();
  if (on_window_close) on_window_close();
  run.result.seconds = std::chrono::duration<double>(end - start).count();
  run.may_close.set();
  co_await run.all_closed.wait();
  co_return std::move(run.result);
}

HttpSessionTarget::HttpSessionTarget(asio::io_context& io, std::string host, unsigned short port, ToolCall call,
                                     std::size_t workers)
    : call_(std::move(call)) {
  for (std::size_t i = 0; i < workers; ++i) {
    sessions_.push_back(std::make_unique<McpHttpSession>(io.get_executor(), host, port, kCallTimeout));
  }
}

asio::awaitable<std::string> HttpSessionTarget::open(std::size_t worker) {
  std::string err = co_await sessions_[worker]->open();
  co_return err;
}

asio::awaitable<std::string> HttpSessionTarget::call(std::size_t worker) {
  std::string err = co_await sessions_[worker]->call_tool(call_.name, call_.arguments, call_.min_result_bytes);
  co_return err;
}

asio::awaitable<void> HttpSessionTarget::close(std::size_t worker) { co_await sessions_[worker]->close(); }

std::uint64_t HttpSessionTarget::reconnects() const {
  std::uint64_t n = 0;
  for (const auto& s : sessions_) n += s->reconnects();
  return n;
}

HttpBatchTarget::HttpBatchTarget(asio::io_context& io, std::string host, unsigned short port,
                                 ToolCall call, std::size_t workers, std::size_t calls_per_request)
    : calls_per_request_(calls_per_request) {
  body_ = R"({"calls":[)";
  for (std::size_t i = 0; i < calls_per_request; ++i) {
    if (i) body_ += ',';
    body_ += R"({"tool":")" + call.name + R"(","arguments":)" + call.arguments + "}";
  }
  body_ += "]}";
  for (std::size_t i = 0; i < workers; ++i) {
    sessions_.push_back(
        std::make_unique<McpHttpSession>(io.get_executor(), host, port, kCallTimeout));
  }
}

asio::awaitable<std::string> HttpBatchTarget::call(std::size_t worker) {
  std::string body = body_;
  HttpResult res = co_await sessions_[worker]->post("/v1/batch", std::move(body));
  if (!res.error.empty()) co_return res.error;
  if (res.status != 200)
    co_return "HTTP " + std::to_string(res.status) + ": " + res.body.substr(0, 300);
  std::size_t ok = 0;
  for (std::size_t at = res.body.find(R"("outcome":"ok")"); at != std::string::npos;
       at = res.body.find(R"("outcome":"ok")", at + 1)) {
    ++ok;
  }
  if (ok != calls_per_request_) {
    co_return std::to_string(ok) + " of " + std::to_string(calls_per_request_) +
        " calls ok: " + res.body.substr(0, 300);
  }
  co_return std::string();
}

asio::awaitable<void> HttpBatchTarget::close(std::size_t worker) {
  co_await sessions_[worker]->close();
}

HttpSessionPerCallTarget::HttpSessionPerCallTarget(asio::io_context& io, std::string host, unsigned short port,
                                                   ToolCall call)
    : io_(io), host_(std::move(host)), port_(port), call_(std::move(call)) {}

asio::awaitable<std::string> HttpSessionPerCallTarget::open(std::size_t) { co_return std::string(); }

asio::awaitable<std::string> HttpSessionPerCallTarget::call(std::size_t) {
  McpHttpSession session(io_.get_executor(), host_, port_, kCallTimeout);
  std::string err = co_await session.open();
  if (!err.empty()) {
    co_await session.close();
    co_return err;
  }
  std::string call_err = co_await session.call_tool(call_.name, call_.arguments, call_.min_result_bytes);
  co_await session.close();
  co_return call_err;
}

asio::awaitable<void> HttpSessionPerCallTarget::close(std::size_t) { co_return; }

asio::awaitable<std::string> StdioTarget::open(std::size_t) { co_return std::string(); }

asio::awaitable<std::string> StdioTarget::call(std::size_t) {
  std::string err = co_await session_.call_tool(call_.name, call_.arguments, call_.min_result_bytes);
  co_return err;
}

asio::awaitable<void> StdioTarget::close(std::size_t) { co_return; }

}  // namespace toolbridge::bench
