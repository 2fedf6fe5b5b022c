// rollout: N trajectories × M tool calls with a mixed latency profile, through the tool layers
// agent frameworks use. What matters is the makespan against the ideal (the tools' own time).
#include <fmt/format.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <iostream>
#include <mutex>
#include <thread>

#include "helper_process.h"
#include "mcp_http.h"
#include "scenario_support.h"
#include "spawn_call.h"

namespace toolbridge::bench {

namespace asio = boost::asio;
namespace bj = boost::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// The latency profile of a research trajectory: web search ≈ 1 s, scraping a page ≈ 3 s, running
// python ≈ 0.5 s. Trajectory i starts at a different point of the cycle so calls of every kind
// overlap, and every trajectory's total is the same when M is a multiple of the cycle.
constexpr double kCycleMs[] = {1000, 500, 3000, 1000,
                               500};  // search, python, scrape, search, python
constexpr std::size_t kCycle = std::size(kCycleMs);

using Plan = std::vector<std::vector<long>>;  // per trajectory, the ms of each call

Plan make_plan(std::size_t trajectories, std::size_t calls, double scale) {
  Plan plan(trajectories);
  for (std::size_t i = 0; i < trajectories; ++i) {
    for (std::size_t k = 0; k < calls; ++k)
      plan[i].push_back(std::lround(kCycleMs[(i + k) % kCycle] * scale));
  }
  return plan;
}

double ideal_seconds(const Plan& plan) {
  long longest = 0;
  for (const auto& t : plan) {
    long sum = 0;
    for (long ms : t) sum += ms;
    longest = std::max(longest, sum);
  }
  return static_cast<double>(longest) / 1000.0;
}

struct Outcome {
  double makespan_s = 0;
  std::uint64_t calls = 0;
  std::uint64_t errors = 0;
  std::string first_error;
  Latencies overhead_us;  // per successful call: latency minus the planned tool time
  std::uint64_t server_processes = 0;
  double client_cpu_s = -1;   // the client process's own CPU over the run; < 0: unknown
  double gateway_cpu_s = -1;  // the gateway's, for toolbridge rows
  bool ran = false;
};

double cpu_seconds_of_this_process() {
  const ProcSample s = sample_process(::getpid());
  return s.ok ? s.cpu_us / 1e6 : -1;
}

// The server whose `sleep` tool every row calls: the fixture, or the FastMCP server (--server).
struct ToolServer {
  std::string name;  // its name in the gateway config, so the gateway's tool is NAME__sleep
  std::vector<std::string> argv;
};

std::string sleep_args(long ms) {
  return fmt::format(R"({{"ms":{}}})", ms);
}

// (a) spawn-per-call from C++: one thread per trajectory, each call a fresh fixture process.
Outcome spawn_per_call_rollout(const ToolServer& server, const Plan& plan) {
  Outcome out;
  std::mutex mu;
  const double cpu0 = cpu_seconds_of_this_process();
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (const auto& calls : plan) {
    threads.emplace_back([&, calls] {
      for (long ms : calls) {
        SpawnCallResult one = spawn_per_call(server.argv, "sleep", sleep_args(ms),
                                             std::chrono::milliseconds(ms) + 60s, 5s);
        std::lock_guard lock(mu);
        ++out.calls;
        ++out.server_processes;
        if (one.error.empty()) {
          out.overhead_us.add((one.ms - static_cast<double>(ms)) * 1000);
        } else {
          ++out.errors;
          if (out.first_error.empty()) out.first_error = one.error;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  out.makespan_s = std::chrono::duration<double>(Clock::now() - start).count();
  out.client_cpu_s = cpu0 < 0 ? -1 : cpu_seconds_of_this_process() - cpu0;
  out.ran = true;
  return out;
}

// (b) and the Python rows: the official Python SDK in bench/python/rollout_driver.py.
Outcome python_rollout(const Options& o, const ToolServer& server, const Plan& plan,
                       const std::string& mode, const std::string& url, std::size_t batch = 1) {
  Outcome out;
  bj::array trajectories;
  for (const auto& t : plan) {
    bj::array calls;
    for (long ms : t) calls.push_back(ms);
    trajectories.push_back(std::move(calls));
  }
  bj::array command;
  for (const auto& a : server.argv) command.push_back(bj::value(a));
  const bj::object spec{
      {"mode", mode},
      {"url", url},
      {"tool", mode == "stdio" || mode == "spawn" ? "sleep" : server.name + "__sleep"},
      {"command", command},
      {"batch", batch},
      {"plan", trajectories}};
  // Generous: a spawn of a Python server can take seconds per call on two busy cores.
  const auto timeout =
      std::chrono::milliseconds(static_cast<long>(ideal_seconds(plan) * 1000 * 5)) + 120s +
      20s * static_cast<long>(plan.empty() ? 0 : plan.front().size());
  HelperResult res = run_helper({o.python_bin, o.bench_python_dir + "/rollout_driver.py"},
                                bj::serialize(spec), timeout);
  if (!res.error.empty()) {
    out.errors = 1;
    out.first_error = res.error + (res.stderr_tail.empty() ? "" : "\n" + res.stderr_tail);
    return out;
  }
  boost::system::error_code ec;
  bj::value v = bj::parse(res.out, ec);
  const bj::object* obj = !ec ? v.if_object() : nullptr;
  if (!obj || !obj->contains("makespan_s")) {
    out.errors = 1;
    out.first_error = "unexpected output from the rollout driver: " + res.out.substr(0, 300) +
                      "\n" + res.stderr_tail;
    return out;
  }
  out.makespan_s = obj->at("makespan_s").to_number<double>();
  if (const auto* cpu = obj->if_contains("cpu_s")) out.client_cpu_s = cpu->to_number<double>();
  out.calls = obj->at("calls").to_number<std::uint64_t>();
  out.errors = obj->at("errors").to_number<std::uint64_t>();
  out.first_error = std::string(obj->at("first_error").as_string());
  for (const auto& ms : obj->at("overhead_ms").as_array())
    out.overhead_us.add(ms.to_number<double>() * 1000);
  out.ran = true;
  return out;
}

// (c) toolbridge from C++: one MCP session (and keep-alive connection) per trajectory.
asio::awaitable<void> http_trajectory(const GatewayProcess& gw, std::string tool,
                                      const std::vector<long>& calls, Outcome& out,
                                      std::size_t& remaining) {
  auto ex = co_await asio::this_coro::executor;
  McpHttpSession session(ex, gw.host(), gw.port(), 120s);
  std::string err = co_await session.open();
  if (!err.empty()) {
    ++out.errors;
    if (out.first_error.empty()) out.first_error = "open: " + err;
  }
  for (std::size_t k = 0; err.empty() && k < calls.size(); ++k) {
    const std::string args = sleep_args(calls[k]);
    const auto t0 = Clock::now();
    std::string e = co_await session.call_tool(tool, args, 0);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    ++out.calls;
    if (e.empty()) {
      out.overhead_us.add(us - static_cast<double>(calls[k]) * 1000);
    } else {
      ++out.errors;
      if (out.first_error.empty()) out.first_error = e;
    }
  }
  co_await session.close();
  --remaining;
}

Outcome gateway_rollout_cpp(const GatewayProcess& gw, const ToolServer& server, const Plan& plan) {
  Outcome out;
  asio::io_context io(1);
  std::size_t remaining = plan.size();
  const double cpu0 = cpu_seconds_of_this_process();
  const auto start = Clock::now();
  for (const auto& calls : plan)
    asio::co_spawn(io, http_trajectory(gw, server.name + "__sleep", calls, out, remaining),
                   asio::detached);
  io.run();
  out.makespan_s = std::chrono::duration<double>(Clock::now() - start).count();
  out.client_cpu_s = cpu0 < 0 ? -1 : cpu_seconds_of_this_process() - cpu0;
  out.ran = remaining == 0;
  if (!out.ran && out.first_error.empty()) out.first_error = "a trajectory did not finish";
  return out;
}

}  // namespace

ScenarioResult run_rollout(const Options& o) {
  const std::size_t n = o.rollout_trajectories ? o.rollout_trajectories : (o.short_mode ? 8 : 64);
  const std::size_t m = o.rollout_calls ? o.rollout_calls : (o.short_mode ? 5 : 10);
  const double scale = o.rollout_scale > 0 ? o.rollout_scale : (o.short_mode ? 0.05 : 1.0);
  const Plan plan = make_plan(n, m, scale);
  const double ideal = ideal_seconds(plan);
  const bool fastmcp = o.rollout_server == "fastmcp";
  const ToolServer server =
      fastmcp ? ToolServer{"fastmcp", fastmcp_argv(o)} : ToolServer{"fixture", {o.fixture_bin}};
  ScenarioResult r{Table(
      "rollout",
      fmt::format("rollout: {} trajectories × {} calls (search {:g} ms, scrape {:g} ms, python "
                  "{:g} ms) on the {} server, ideal makespan {:.2f} s",
                  n, m, 1000 * scale, 3000 * scale, 500 * scale, server.name, ideal),
      {{"tool layer"},
       {"client"},
       {"server processes"},
       {"calls"},
       {"errors"},
       {"makespan s", 3},
       {"overhead s", 3},
       {"overhead %", 2},
       {"per-call overhead p50 ms", 2},
       {"p99 ms", 2},
       {"client CPU s", 2},
       {"client CPU ms/call", 3},
       {"gw CPU s", 2}})};

  auto add_row = [&](const char* layer, const char* client, const Outcome& out) {
    const double over = out.makespan_s - ideal;
    const bool ran = out.ran && out.makespan_s > 0;
    r.table.add_row(
        {bj::value(layer), bj::value(client),
         bj::value(static_cast<std::int64_t>(out.server_processes)),
         bj::value(static_cast<std::int64_t>(out.calls)),
         bj::value(static_cast<std::int64_t>(out.errors)), number_or_null(out.makespan_s, ran),
         number_or_null(over, ran), number_or_null(ran ? 100.0 * over / out.makespan_s : 0, ran),
         number_or_null(out.overhead_us.percentile(50) / 1000, out.overhead_us.count() > 0),
         number_or_null(out.overhead_us.percentile(99) / 1000, out.overhead_us.count() > 0),
         number_or_null(out.client_cpu_s, out.client_cpu_s >= 0),
         number_or_null(out.calls ? 1000 * out.client_cpu_s / static_cast<double>(out.calls) : 0,
                        out.client_cpu_s >= 0 && out.calls > 0),
         number_or_null(out.gateway_cpu_s, out.gateway_cpu_s >= 0)});
    std::cerr << fmt::format("  {} ({}): makespan {:.3f} s (ideal {:.3f}), {} calls, {} errors\n",
                             layer, client, out.makespan_s, ideal, out.calls, out.errors);
    if (out.errors > 0 || !out.ran) {
      r.ok = false;
      r.problems.push_back(fmt::format("{} ({}): {} error(s); first: {}", layer, client, out.errors,
                                       out.first_error));
    }
  };

  std::cerr << fmt::format("rollout: {} × {} calls, spawn per call (C++)\n", n, m);
  add_row("spawn per call", "C++ (this bench)", spawn_per_call_rollout(server, plan));

  const bool python = ::access(o.python_bin.c_str(), X_OK) == 0;
  if (!python) {
    r.ok = false;
    r.problems.push_back("no Python at '" + o.python_bin +
                         "' (--python; scripts/setup creates .venv): the Python SDK "
                         "rows are missing");
  }
  if (python) {
    std::cerr << "rollout: spawn per call (Python SDK)\n";
    Outcome spawn = python_rollout(o, server, plan, "spawn", "");
    spawn.server_processes = n * m;
    add_row("spawn per call", "Python SDK", spawn);
    std::cerr << "rollout: persistent stdio session per trajectory (Python SDK)\n";
    Outcome stdio = python_rollout(o, server, plan, "stdio", "");
    stdio.server_processes = n;
    add_row("stdio session per trajectory", "Python SDK", stdio);
  }

  GatewayProcess gw;
  std::cerr << "rollout: starting the gateway\n";
  const std::string err = gw.start(o.toolbridge_bin, gateway_config(o, false, fastmcp), 60s);
  if (!err.empty()) {
    r.ok = false;
    r.problems.push_back("gateway could not start: " + err);
  } else {
    if (python) {
      std::cerr << "rollout: toolbridge (Python SDK)\n";
      const ProcSample g0 = gw.sample();
      Outcome py = python_rollout(o, server, plan, "http",
                                  fmt::format("http://{}:{}/mcp", gw.host(), gw.port()));
      const ProcSample g1 = gw.sample();
      if (g0.ok && g1.ok) py.gateway_cpu_s = (g1.cpu_us - g0.cpu_us) / 1e6;
      py.server_processes = 1;
      add_row("toolbridge", "Python SDK", py);
      // The toolbridge Python client: one call per request, then a trajectory's calls in
      // batches of kCycle (sequential, so the plan's timing holds).
      const std::string base = fmt::format("http://{}:{}", gw.host(), gw.port());
      for (const auto& [mode, client, batch] :
           {std::tuple{"toolbridge-call", "toolbridge.AsyncClient, call", std::size_t{1}},
            std::tuple{"toolbridge-batch", "toolbridge.AsyncClient, batch", kCycle}}) {
        std::cerr << fmt::format("rollout: toolbridge ({})\n", client);
        const ProcSample b0 = gw.sample();
        Outcome tb = python_rollout(o, server, plan, mode, base, batch);
        const ProcSample b1 = gw.sample();
        if (b0.ok && b1.ok) tb.gateway_cpu_s = (b1.cpu_us - b0.cpu_us) / 1e6;
        tb.server_processes = 1;
        add_row("toolbridge", client, tb);
      }
    }
    std::cerr << "rollout: toolbridge (C++)\n";
    const ProcSample g0 = gw.sample();
    Outcome cpp = gateway_rollout_cpp(gw, server, plan);
    const ProcSample g1 = gw.sample();
    if (g0.ok && g1.ok) cpp.gateway_cpu_s = (g1.cpu_us - g0.cpu_us) / 1e6;
    cpp.server_processes = 1;
    add_row("toolbridge", "C++ (this bench)", cpp);
    report_gateway_end(r, gw);
  }
  r.table.add_note(
      fmt::format("Each trajectory makes its {} calls one after another ({} `sleep`, the "
                  "planned time each); all {} run "
                  "at once. ideal = the longest trajectory's tool time ({:.3f} s); overhead = "
                  "makespan − ideal, % of makespan. "
                  "Per-call overhead = call latency − tool time (spawn rows: spawn to exit). "
                  "client CPU: the client process's "
                  "own CPU over the run (not the servers it spawned), and per call; gw CPU: the "
                  "gateway's. toolbridge.AsyncClient rows: the Python client of python/ over "
                  "POST /v1/batch, one call per request (call) or a trajectory's calls {} at a "
                  "time in one sequential batch (batch). "
                  "Makespan includes opening the "
                  "sessions (and spawning their servers) but not starting the gateway, which "
                  "serves warm across runs.",
                  m, server.name, n, ideal, kCycle));
  return r;
}

}  // namespace toolbridge::bench
