#pragma once
// Pieces every scenario uses: running one coroutine to completion, the generated gateway config,
// CPU samples of the processes on a measured path, and reporting errors and the gateway's end.
#include <sys/types.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gateway_process.h"
#include "load.h"
#include "scenarios.h"

namespace toolbridge::bench {

// CPU and memory of the processes on a measured path: the gateway (absent for direct stdio
// rows or other gateways), the server behind it, and this bench itself.
struct PathSample {
  std::optional<ProcSample> gateway;
  ProcSample server;
  ProcSample bench;
};
PathSample sample_path(const GatewayProcess* gw, pid_t server);

// Runs `task` on `io` until it completes (other coroutines, such as a stdio reader, may stay
// pending). Rethrows what the task threw.
template <class T>
T run_until_done(boost::asio::io_context& io, boost::asio::awaitable<T> task) {
  std::optional<T> out;
  std::exception_ptr failure;
  bool done = false;
  boost::asio::co_spawn(io, std::move(task), [&](std::exception_ptr e, T value) {
    failure = e;
    if (!e) out = std::move(value);
    done = true;
  });
  while (!done) {
    if (io.run_one() == 0) break;
  }
  io.restart();
  if (failure) std::rethrow_exception(failure);
  if (!done)
    throw std::runtime_error("internal: the event loop ran out of work before the task completed");
  return std::move(*out);
}

// Drains whatever is left (readers seeing EOF after a child exited), bounded in time.
void drain(boost::asio::io_context& io);

// The measured window of a row: --window if given, else the mode's default.
std::chrono::milliseconds window(const Options& o, double short_s, double full_s);

// A gateway config with the fixture (and server-everything, the FastMCP server if asked) on
// 127.0.0.1:0.
// `trace_file`: the gateway's call trace (gateway.trace), empty for none.
std::string gateway_config(const Options& o, bool with_everything, bool with_fastmcp = false,
                           const std::string& trace_file = {});
// argv of the FastMCP echo server (bench/python/fastmcp_server.py under --python).
std::vector<std::string> fastmcp_argv(const Options& o);
std::string yaml_string(const std::string& s);

// The pid of a server instance, from the gateway's /healthz; -1 if unknown.
pid_t server_pid(const GatewayProcess& gw, const std::string& server);

boost::json::value number_or_null(double v, bool available);
void report_errors(ScenarioResult& r, const std::string& what, const LoadResult& res);
// Warnings from the gateway's log, then SIGTERM; a stop other than exit code 0 is a problem.
void report_gateway_end(ScenarioResult& r, GatewayProcess& gw);

}  // namespace toolbridge::bench
