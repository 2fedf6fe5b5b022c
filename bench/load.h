#pragma once
// Load: `concurrency` workers, each with its own target connection (an MCP session over HTTP, or
// a share of one stdio pipe). Closed loop: each issues its next call as soon as the previous one
// answers; fixed rate: calls are due on a schedule (see LoadPlan::rate). Setup and warm-up happen
// before the measured window opens for everyone at once.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mcp_http.h"
#include "report.h"
#include "stdio_session.h"

namespace toolbridge::bench {

// What a worker drives. Errors are returned as text, never thrown.
class Target {
 public:
  virtual ~Target() = default;
  virtual boost::asio::awaitable<std::string> open(std::size_t worker) = 0;
  virtual boost::asio::awaitable<std::string> call(std::size_t worker) = 0;
  virtual boost::asio::awaitable<void> close(std::size_t worker) = 0;
};

// A tool call and how to recognise a good answer.
struct ToolCall {
  std::string name;        // e.g. "fixture__echo" through the gateway, "echo" direct
  std::string arguments;   // raw JSON object
  std::size_t min_result_bytes = 0;
};

// One persistent MCP session (and keep-alive connection) per worker.
class HttpSessionTarget : public Target {
 public:
  HttpSessionTarget(boost::asio::io_context& io, std::string host, unsigned short port, ToolCall call,
                    std::size_t workers);
  boost::asio::awaitable<std::string> open(std::size_t worker) override;
  boost::asio::awaitable<std::string> call(std::size_t worker) override;
  boost::asio::awaitable<void> close(std::size_t worker) override;
  std::uint64_t reconnects() const;

 private:
  ToolCall call_;
  std::vector<std::unique_ptr<McpHttpSession>> sessions_;
};

// One keep-alive connection per worker posting `calls_per_request` copies of one call to
// POST /v1/batch (no MCP session); a call of the load is one batch request.
class HttpBatchTarget : public Target {
 public:
  HttpBatchTarget(boost::asio::io_context& io, std::string host, unsigned short port, ToolCall call,
                  std::size_t workers, std::size_t calls_per_request);
  boost::asio::awaitable<std::string> open(std::size_t) override { co_return std::string(); }
  boost::asio::awaitable<std::string> call(std::size_t worker) override;
  boost::asio::awaitable<void> close(std::size_t worker) override;

 private:
  std::string body_;
  std::size_t calls_per_request_;
  std::vector<std::unique_ptr<McpHttpSession>> sessions_;
};

// What a framework that creates an MCP client per call does when pointed at the gateway: connect,
// initialize, call, DELETE, close — every call.
class HttpSessionPerCallTarget : public Target {
 public:
  HttpSessionPerCallTarget(boost::asio::io_context& io, std::string host, unsigned short port, ToolCall call);
  boost::asio::awaitable<std::string> open(std::size_t) override;
  boost::asio::awaitable<std::string> call(std::size_t worker) override;
  boost::asio::awaitable<void> close(std::size_t) override;

 private:
  boost::asio::io_context& io_;
  std::string host_;
  unsigned short port_;
  ToolCall call_;
};

// Every worker shares one stdio session; calls from all workers are pipelined on its pipe.
class StdioTarget : public Target {
 public:
  StdioTarget(StdioSession& session, ToolCall call) : session_(session), call_(std::move(call)) {}
  boost::asio::awaitable<std::string> open(std::size_t) override;
  boost::asio::awaitable<std::string> call(std::size_t) override;
  boost::asio::awaitable<void> close(std::size_t) override;

 private:
  StdioSession& session_;
  ToolCall call_;
};

struct LoadPlan {
  std::size_t concurrency = 1;
  std::size_t warmup_calls = 5;                    // per worker, before the window opens
  std::chrono::milliseconds duration{1000};        // measured window (closed loop until then)
  std::uint64_t max_calls = 0;                     // stop earlier after this many calls (0: no cap)
  // 0: closed loop. Otherwise open loop: call k is due at window start + k / rate, taken by the
  // next free worker, and its latency counts from when it was due, so a stall shows up in the
  // latency of every call it delayed (no coordinated omission).
  double rate = 0;
};

struct LoadResult {
  std::uint64_t calls = 0;          // measured calls, successful or not
  std::uint64_t errors = 0;         // measured calls that failed, plus workers that could not start
  std::uint64_t setup_errors = 0;   // of which: open or warm-up failures
  Latencies latency;                // µs, successful measured calls
  double seconds = 0;               // measured window
  std::string first_error;
};

// Runs the plan against `target`. `on_window_open` and `on_window_close` run exactly at the edges
// of the measured window (for CPU samples).
boost::asio::awaitable<LoadResult> run_closed_loop(Target& target, LoadPlan plan,
                                                   std::function<void()> on_window_open,
                                                   std::function<void()> on_window_close);

}  // namespace toolbridge::bench
