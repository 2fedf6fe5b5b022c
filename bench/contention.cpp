// contention: the evaluation's failure, reproduced. Two runs of trajectories share one server
// whose service time grows with its own concurrency (the fixture's `busy` tool: base × (1 +
// (n/k)²) for n calls in progress); the second run starts when the first is half done. Rows: no
// admission limit, a sweep of static limits (the best one marked), the adaptive limit.
#include <fmt/format.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json/parse.hpp>
#include <charconv>
#include <iostream>
#include <map>

#include "mcp_http.h"
#include "scenario_support.h"

namespace toolbridge::bench {

namespace asio = boost::asio;
namespace bj = boost::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

struct Model {
  std::size_t per_run = 60;  // trajectories per run
  std::size_t calls = 10;    // calls per trajectory, one after another
  double base_ms = 20;       // the tool's time alone
  double k = 16;             // concurrency at which it takes twice as long
};

struct Record {
  int run = 0;
  Clock::time_point end;
  double latency_us = 0;
};

struct RunState {
  const GatewayProcess* gw = nullptr;
  Model model;
  std::vector<Record> records;
  std::size_t done[2] = {0, 0};
  Clock::time_point start[2];
  Clock::time_point first_call[2] = {Clock::time_point::max(), Clock::time_point::max()};
  bool second_started = false;
  std::size_t remaining = 0;
  std::uint64_t errors = 0;
  std::string first_error;
};

void start_run(asio::io_context& io, RunState& st, int run);

asio::awaitable<void> trajectory(asio::io_context& io, RunState& st, int run) {
  auto ex = co_await asio::this_coro::executor;
  McpHttpSession session(ex, st.gw->host(), st.gw->port(), 600s);
  session.set_tenant(run == 0 ? "run-1" : "run-2");  // the runs are the tenants
  std::string err = co_await session.open();
  if (!err.empty()) {
    ++st.errors;
    if (st.first_error.empty()) st.first_error = "open: " + err;
  }
  const std::string args = fmt::format(R"({{"ms":{},"k":{}}})", st.model.base_ms, st.model.k);
  if (err.empty()) st.first_call[run] = std::min(st.first_call[run], Clock::now());
  for (std::size_t c = 0; err.empty() && c < st.model.calls; ++c) {
    const auto t0 = Clock::now();
    std::string e = co_await session.call_tool("fixture__busy", args, 0);
    const auto t1 = Clock::now();
    if (!e.empty()) {
      ++st.errors;
      if (st.first_error.empty()) st.first_error = e;
    }
    st.records.push_back({run, t1, std::chrono::duration<double, std::micro>(t1 - t0).count()});
    ++st.done[run];
    // The second run starts when the first is half done.
    if (run == 0 && !st.second_started && 2 * st.done[0] >= st.model.per_run * st.model.calls) {
      st.second_started = true;
      start_run(io, st, 1);
    }
  }
  co_await session.close();
  --st.remaining;
}

void start_run(asio::io_context& io, RunState& st, int run) {
  st.start[run] = Clock::now();
  st.remaining += st.model.per_run;
  for (std::size_t i = 0; i < st.model.per_run; ++i)
    asio::co_spawn(io, trajectory(io, st, run), asio::detached);
}

// A percentile of the gateway's queue-wait histogram (all tenants of `fixture`): the upper
// bound of the bucket it falls in, in ms; -1 without samples.
double queue_wait_ms(const std::string& metrics, double p) {
  const std::string prefix = "toolbridge_admission_queue_wait_seconds_bucket{";
  std::map<double, double> cumulative;  // le -> count, summed over tenants
  double total = 0;
  std::size_t pos = 0;
  while ((pos = metrics.find(prefix, pos)) != std::string::npos) {
    const std::size_t eol = metrics.find('\n', pos);
    const std::string line = metrics.substr(pos, eol - pos);
    pos = eol;
    const std::size_t le = line.find("le=\"");
    const std::size_t space = line.rfind(' ');
    if (le == std::string::npos || space == std::string::npos) continue;
    const std::string bound = line.substr(le + 4, line.find('"', le + 4) - le - 4);
    const double count = std::stod(line.substr(space + 1));
    if (bound == "+Inf") {
      total += count;
    } else {
      cumulative[std::stod(bound)] += count;
    }
  }
  if (total <= 0) return -1;
  for (const auto& [bound, count] : cumulative) {
    if (count >= p / 100.0 * total) return bound * 1000.0;
  }
  return 10'000;  // beyond the last bucket (10 s)
}

struct Outcome {
  double makespan_s[2] = {0, 0};
  Latencies latency;
  double queue_p50_ms = -1, queue_p99_ms = -1;
  double fairness = 0;
  std::size_t final_limit = 0;
  std::uint64_t calls = 0, errors = 0;
  std::string first_error;
  bool ran = false;
};

std::string config_for(const Options& o, const std::string& limit, const Model& m) {
  std::string y =
      "gateway:\n  listen: 127.0.0.1:0\n  admission_queue_size: 10000\nservers:\n  fixture:\n"
      "    command: " +
      yaml_string(o.fixture_bin) + "\n    call_timeout: 600s\n";
  if (limit == "adaptive") {
    // The window holds a few dozen calls at the server's best rate.
    const long window_ms = std::max<long>(50, std::lround(m.base_ms * 5));
    y += fmt::format(
        "    concurrency_limit: adaptive\n    adaptive: {{min_limit: 1, max_limit: 512, "
        "window: {}ms, probe_interval: 30s}}\n",
        window_ms);
  } else if (limit != "none") {
    y += "    concurrency_limit: " + limit + "\n";
  }
  return y;
}

Outcome run_row(const Options& o, const Model& m, const std::string& limit) {
  Outcome out;
  GatewayProcess gw;
  if (std::string err = gw.start(o.toolbridge_bin, config_for(o, limit, m), 60s); !err.empty()) {
    out.first_error = "gateway could not start: " + err;
    return out;
  }
  asio::io_context io(1);
  RunState st;
  st.gw = &gw;
  st.model = m;
  st.records.reserve(2 * m.per_run * m.calls);
  start_run(io, st, 0);
  io.run();
  out.ran = st.remaining == 0;
  out.errors = st.errors;
  out.first_error = st.first_error;
  out.calls = st.records.size();
  Clock::time_point end[2] = {st.start[0], st.start[1]};
  for (const auto& r : st.records) {
    end[r.run] = std::max(end[r.run], r.end);
    out.latency.add(r.latency_us);
  }
  for (int i = 0; i < 2; ++i)
    out.makespan_s[i] = std::chrono::duration<double>(end[i] - st.start[i]).count();
  // Jain's index of the two runs' throughput while both were active (from the second run's first
  // call: opening its sessions is not admission's business).
  const auto from = st.first_call[1];
  const auto to = std::min(end[0], end[1]);
  double x[2] = {0, 0};
  for (const auto& r : st.records) {
    if (r.end >= from && r.end <= to) x[r.run] += 1;
  }
  const double sum = x[0] + x[1];
  const double squares = x[0] * x[0] + x[1] * x[1];
  out.fairness = squares > 0 ? sum * sum / (2 * squares) : 0;
  const HttpResult metrics = http_get(gw.host(), gw.port(), "/metrics", 5s);
  out.queue_p50_ms = queue_wait_ms(metrics.body, 50);
  out.queue_p99_ms = queue_wait_ms(metrics.body, 99);
  const HttpResult health = http_get(gw.host(), gw.port(), "/healthz", 5s);
  boost::system::error_code ec;
  const bj::value h = bj::parse(health.body, ec);
  if (!ec && h.is_object()) {
    if (const auto* l = h.as_object()
                            .at("admission")
                            .at("servers")
                            .at("fixture")
                            .as_object()
                            .if_contains("limit"))
      out.final_limit = static_cast<std::size_t>(l->to_number<double>());
  }
  gw.stop();
  return out;
}

}  // namespace

ScenarioResult run_contention(const Options& o) {
  Model m;
  if (o.short_mode) m = Model{12, 4, 10, 8};
  std::vector<std::string> sweep;
  for (double f : {0.25, 0.5, 1.0, 2.0})
    sweep.push_back(std::to_string(std::max<long>(1, std::lround(m.k * f))));
  ScenarioResult r{Table(
      "contention",
      fmt::format("contention: 2 runs × {} trajectories × {} calls to a tool taking {:g} ms × "
                  "(1 + (n/{:g})²) for n calls in progress; run 2 starts when run 1 is half done",
                  m.per_run, m.calls, m.base_ms, m.k),
      {{"admission"},
       {"limit"},
       {"calls"},
       {"errors"},
       {"run 1 makespan s", 2},
       {"run 2 makespan s", 2},
       {"latency p50 ms", 1},
       {"p99 ms", 1},
       {"queue wait p50 ms", 1},
       {"queue p99 ms", 1},
       {"fairness", 3}})};
  auto add_row = [&](const std::string& name, const Outcome& out) {
    const bool ok = out.ran && out.calls > 0;
    r.table.add_row({bj::value(name), bj::value(static_cast<std::int64_t>(out.final_limit)),
                     bj::value(static_cast<std::int64_t>(out.calls)),
                     bj::value(static_cast<std::int64_t>(out.errors)),
                     number_or_null(out.makespan_s[0], ok), number_or_null(out.makespan_s[1], ok),
                     number_or_null(out.latency.percentile(50) / 1000, ok),
                     number_or_null(out.latency.percentile(99) / 1000, ok),
                     number_or_null(out.queue_p50_ms, out.queue_p50_ms >= 0),
                     number_or_null(out.queue_p99_ms, out.queue_p99_ms >= 0),
                     number_or_null(out.fairness, ok)});
    std::cerr << fmt::format("  {}: makespans {:.2f} / {:.2f} s, {} calls, {} errors\n", name,
                             out.makespan_s[0], out.makespan_s[1], out.calls, out.errors);
    if (out.errors > 0 || !out.ran) {
      r.ok = false;
      r.problems.push_back(
          fmt::format("{}: {} error(s); first: {}", name, out.errors, out.first_error));
    }
  };
  std::cerr << "contention: no limit\n";
  add_row("none", run_row(o, m, "none"));
  std::vector<std::pair<std::string, Outcome>> statics;
  for (const auto& limit : sweep) {
    std::cerr << "contention: static limit " << limit << "\n";
    statics.emplace_back(limit, run_row(o, m, limit));
  }
  std::size_t best = 0;
  for (std::size_t i = 1; i < statics.size(); ++i) {
    const auto total = [](const Outcome& x) { return x.makespan_s[0] + x.makespan_s[1]; };
    if (statics[i].second.ran && total(statics[i].second) < total(statics[best].second)) best = i;
  }
  for (std::size_t i = 0; i < statics.size(); ++i)
    add_row(i == best ? "static (best of the sweep)" : "static", statics[i].second);
  std::cerr << "contention: adaptive\n";
  add_row("adaptive", run_row(o, m, "adaptive"));
  r.table.add_note(
      "Each trajectory is its own MCP session; each run is one tenant (X-Toolbridge-Tenant: "
      "run-1, run-2), so the queue is fair between the runs. limit: the server's concurrency "
      "limit at the end "
      "(0: none). Latency: as the client saw each call (queue + execution). Queue wait: from the "
      "gateway's "
      "histogram, the upper bound of the bucket holding the percentile. Fairness: Jain's index of "
      "the two runs' "
      "completed calls while both were active, from the second run's first call (1 = equal). The "
      "best static limit is the sweep's "
      "lowest total "
      "makespan.");
  return r;
}

}  // namespace toolbridge::bench
