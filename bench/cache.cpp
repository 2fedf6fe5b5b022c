// cache: what the result cache saves a rollout whose trajectories repeat searches.
//
// The workload: T trajectories run at once, each making C searches one after another against
// the fixture's `lookup` tool with a fixed latency (1 s by default: a third-party search API).
// Queries are drawn from a vocabulary of V queries with a Zipf distribution (P(rank k) ∝ 1/k^s,
// s = 1.1, seeded: every row replays the same sequence), so a few queries are very common and
// most are rare, as when RL samples of one prompt search for the same things. Rows: no cache,
// memory, disk (a fresh LMDB directory), Redis (a fresh redis-server), and the same evaluation
// again on a new gateway over the warm disk directory. Upstream calls are counted by the fixture
// itself (its `executions` tool). Then 100 identical calls at once (single-flight: 1 execution),
// and the gateway's CPU per call at concurrency 64 for a memory hit and for the same call
// proxied without a cache (rounds interleaved), one call per MCP request and 16 per batch
// request; the issue asks a hit to cost at most half.
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json/parse.hpp>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <random>
#include <set>
#include <thread>

#include "load.h"
#include "mcp_http.h"
#include "peer_process.h"
#include "process/child.h"
#include "scenario_support.h"

namespace toolbridge::bench {

namespace asio = boost::asio;
namespace bj = boost::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

struct Workload {
  std::size_t trajectories = 64;
  std::size_t calls = 8;
  std::size_t vocabulary = 200;
  double zipf_s = 1.1;
  int latency_ms = 1000;
  std::vector<std::vector<std::string>> queries;  // per trajectory, in order
};

Workload make_workload(const Options& o) {
  Workload w;
  if (o.short_mode) {
    w.trajectories = 16;
    w.calls = 4;
  }
  if (o.rollout_trajectories) w.trajectories = o.rollout_trajectories;
  if (o.rollout_calls) w.calls = o.rollout_calls;
  if (o.rollout_scale > 0) w.latency_ms = static_cast<int>(1000 * o.rollout_scale);
  std::vector<double> cumulative;
  double total = 0;
  for (std::size_t k = 1; k <= w.vocabulary; ++k) {
    total += 1.0 / std::pow(static_cast<double>(k), w.zipf_s);
    cumulative.push_back(total);
  }
  std::mt19937_64 random(42);
  std::uniform_real_distribution<double> uniform(0, total);
  w.queries.resize(w.trajectories);
  for (auto& t : w.queries) {
    for (std::size_t i = 0; i < w.calls; ++i) {
      const auto rank = static_cast<std::size_t>(
          std::lower_bound(cumulative.begin(), cumulative.end(), uniform(random)) -
          cumulative.begin());
      t.push_back(fmt::format("query {}", rank + 1));
    }
  }
  return w;
}

std::size_t distinct_queries(const Workload& w) {
  std::set<std::string> all;
  for (const auto& t : w.queries) all.insert(t.begin(), t.end());
  return all.size();
}

// A redis-server on a free port without persistence; stopped with the object.
class Redis {
 public:
  std::string start() {
    port_ = free_port();
    process::Spec spec;
    spec.argv = {"redis-server",
                 "--port",
                 std::to_string(port_),
                 "--bind",
                 "127.0.0.1",
                 "--save",
                 "",
                 "--appendonly",
                 "no",
                 "--dir",
                 std::filesystem::temp_directory_path().string()};
    spec.env = process::build_env({}, {});
    base::Expected<process::Child> spawned = process::Child::spawn(spec);
    if (!spawned) return "cannot start redis-server: " + spawned.error();
    child_ = std::move(*spawned);
    for (int i = 0; i < 100; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(port_);
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
      ::close(fd);
      if (up) return {};
      std::this_thread::sleep_for(50ms);
    }
    return "redis-server did not accept connections within 5 s";
  }
  unsigned short port() const { return port_; }

 private:
  unsigned short port_ = 0;
  process::Child child_;
};

std::string config(const Options& o, const std::string& tier, const std::string& disk_dir,
                   unsigned short redis_port) {
  std::string c = "gateway:\n  listen: 127.0.0.1:0\n";
  if (tier != "none") {
    c += "  cache:\n";
    if (!disk_dir.empty())
      c += "    disk: {path: " + yaml_string(disk_dir) + ", max_bytes: 256MiB}\n";
    if (redis_port)
      c += fmt::format("    redis: {{address: '127.0.0.1:{}', timeout: 250ms}}\n", redis_port);
  }
  c += "servers:\n  fixture:\n    command: " + yaml_string(o.fixture_bin) +
       "\n    call_timeout: 120s\n";
  if (tier != "none") c += "    cache: {tools: [lookup], ttl: 1h, tier: " + tier + "}\n";
  return c;
}

struct RolloutStats {
  double makespan = 0;
  double trajectory_seconds = 0;  // summed over trajectories
  std::uint64_t calls = 0;
  std::uint64_t errors = 0;
  std::string first_error;
};

asio::awaitable<void> trajectory(const GatewayProcess& gw, const Workload& w, std::size_t t,
                                 RolloutStats& st) {
  auto ex = co_await asio::this_coro::executor;
  McpHttpSession session(ex, gw.host(), gw.port(), 600s);
  std::string err = co_await session.open();
  const auto start = Clock::now();
  for (std::size_t i = 0; err.empty() && i < w.calls; ++i) {
    const std::string args =
        fmt::format(R"({{"query":"{}","delay_ms":{}}})", w.queries[t][i], w.latency_ms);
    err = co_await session.call_tool("fixture__lookup", args, 0);
    ++st.calls;
  }
  st.trajectory_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  if (!err.empty() && st.first_error.empty()) st.first_error = err;
  if (!err.empty()) ++st.errors;
  co_await session.close();
}

RolloutStats rollout(const GatewayProcess& gw, const Workload& w) {
  asio::io_context io(1);
  RolloutStats st;
  const auto start = Clock::now();
  for (std::size_t t = 0; t < w.trajectories; ++t) {
    asio::co_spawn(io, trajectory(gw, w, t, st), asio::detached);
  }
  io.run();
  st.makespan = std::chrono::duration<double>(Clock::now() - start).count();
  return st;
}

// `tool` once on a new session; the text of its first content block, or "" on failure.
std::string call_once(const GatewayProcess& gw, const std::string& tool, const std::string& args) {
  asio::io_context io(1);
  auto task = [&]() -> asio::awaitable<std::string> {
    McpHttpSession s(co_await asio::this_coro::executor, gw.host(), gw.port(), 60s);
    std::string response;
    std::string err = co_await s.open();
    if (err.empty()) err = co_await s.call_tool_response(tool, args, response);
    co_await s.close();
    if (!err.empty()) co_return std::string();
    boost::system::error_code ec;
    const bj::value v = bj::parse(response, ec);
    if (ec) co_return std::string();
    const auto* text = v.at_pointer("/result/content/0/text").if_string();
    co_return text ? std::string(*text) : std::string();
  };
  return run_until_done(io, task());
}

long executions(const GatewayProcess& gw) {
  const std::string text = call_once(gw, "fixture__executions", "{}");
  return text.empty() ? -1 : std::atol(text.c_str());
}

// The sum of a counter's series in /metrics whose labels contain `filter`.
double metric(const GatewayProcess& gw, const std::string& name, const std::string& filter = {}) {
  const HttpResult res = http_get(gw.host(), gw.port(), "/metrics", 10s);
  double total = 0;
  std::size_t at = 0;
  while ((at = res.body.find(name, at)) != std::string::npos) {
    const std::size_t end = res.body.find('\n', at);
    const std::string line = res.body.substr(at, end - at);
    at = end;
    if (line.size() > name.size() && (line[name.size()] == '{' || line[name.size()] == ' ') &&
        (filter.empty() || line.find(filter) != std::string::npos)) {
      total += std::atof(line.c_str() + line.rfind(' ') + 1);
    }
  }
  return total;
}

}  // namespace

ScenarioResult run_cache(const Options& o) {
  const Workload w = make_workload(o);
  ScenarioResult r{Table(
      "cache",
      fmt::format("cache: {} trajectories × {} searches (Zipf s={} over {} queries, {} distinct in "
                  "this run), search latency {} ms",
                  w.trajectories, w.calls, w.zipf_s, w.vocabulary, distinct_queries(w),
                  w.latency_ms),
      {{"row"},
       {"calls"},
       {"makespan s", 2},
       {"mean traj s", 2},
       {"upstream calls"},
       {"hits"},
       {"coalesced"},
       {"errors"},
       {"gw CPU µs/call", 1}})};
  const std::string disk_dir = (std::filesystem::temp_directory_path() /
                                fmt::format("toolbridge-bench-cache-{}", ::getpid()))
                                   .string();
  std::filesystem::remove_all(disk_dir);
  Redis redis;
  std::string redis_error = redis.start();
  if (!redis_error.empty()) {
    r.ok = false;
    r.problems.push_back(redis_error +
                         " (scripts/setup installs redis-server); the Redis row is skipped");
  }

  auto add_rollout_row = [&](const std::string& row, const std::string& tier,
                             unsigned short redis_port) {
    GatewayProcess gw;
    std::cerr << "cache: " << row << "\n";
    const std::string err = gw.start(
        o.toolbridge_bin, config(o, tier, tier == "disk" ? disk_dir : "", redis_port), 30s);
    if (!err.empty()) {
      r.ok = false;
      r.problems.push_back(fmt::format("{}: the gateway could not start: {}", row, err));
      return;
    }
    const RolloutStats st = rollout(gw, w);
    const long upstream = executions(gw);
    r.table.add_row({bj::value(row), bj::value(static_cast<std::int64_t>(st.calls)),
                     bj::value(st.makespan),
                     bj::value(st.trajectory_seconds / static_cast<double>(w.trajectories)),
                     bj::value(static_cast<std::int64_t>(upstream)),
                     bj::value(metric(gw, "toolbridge_cache_hits_total")),
                     bj::value(metric(gw, "toolbridge_cache_coalesced_total")),
                     bj::value(static_cast<std::int64_t>(st.errors)), number_or_null(0, false)});
    if (st.errors) {
      r.ok = false;
      r.problems.push_back(
          fmt::format("{}: {} trajectories failed: {}", row, st.errors, st.first_error));
    }
    report_gateway_end(r, gw);
  };
  add_rollout_row("no cache", "none", 0);
  add_rollout_row("memory", "memory", 0);
  add_rollout_row("disk (empty)", "disk", 0);
  if (redis_error.empty()) add_rollout_row("redis (empty)", "redis", redis.port());
  add_rollout_row("disk, second run (warm)", "disk", 0);
  std::filesystem::remove_all(disk_dir);

  // 100 identical calls at once: one upstream execution.
  {
    GatewayProcess gw;
    std::cerr << "cache: 100 identical concurrent calls\n";
    const std::string err = gw.start(o.toolbridge_bin, config(o, "memory", "", 0), 30s);
    if (err.empty()) {
      Workload same = w;
      same.trajectories = 100;
      same.calls = 1;
      same.queries.assign(100, {"the same query"});
      const RolloutStats st = rollout(gw, same);
      const long upstream = executions(gw);
      r.table.add_row({bj::value("100 identical concurrent calls"),
                       bj::value(static_cast<std::int64_t>(st.calls)), bj::value(st.makespan),
                       bj::value(st.trajectory_seconds / 100.0),
                       bj::value(static_cast<std::int64_t>(upstream)),
                       bj::value(metric(gw, "toolbridge_cache_hits_total")),
                       bj::value(metric(gw, "toolbridge_cache_coalesced_total")),
                       bj::value(static_cast<std::int64_t>(st.errors)), number_or_null(0, false)});
      if (upstream != 1) {
        r.ok = false;
        r.problems.push_back(fmt::format("100 identical calls ran {} times upstream", upstream));
      }
      report_gateway_end(r, gw);
    } else {
      r.ok = false;
      r.problems.push_back("100 identical calls: the gateway could not start: " + err);
    }
  }

  // Gateway CPU per call at concurrency 64: a memory hit vs the same call proxied, one call per
  // MCP request, then kBatch calls per POST /v1/batch (the HTTP front end's share spread over
  // kBatch calls, so what is left is what the cache itself saves).
  constexpr std::size_t kBatch = 16;
  const std::size_t c = o.concurrency.empty() ? 64 : o.concurrency.front();
  const auto win = window(o, 1.0, 5.0);
  const std::size_t rounds = o.short_mode ? 1 : 3;
  const ToolCall lookup{"fixture__lookup", R"({"query":"cpu","delay_ms":0})", 5};
  std::vector<double> cpu[2][2];  // [batch][hit]
  for (std::size_t round = 1; round <= rounds; ++round) {
    for (int batch = 0; batch < 2; ++batch) {
      for (int hit = 0; hit < 2; ++hit) {
        const std::string row =
            fmt::format("{}{}, c={}, round {}", hit ? "memory hit" : "proxied (no cache)",
                        batch ? fmt::format(", batches of {}", kBatch) : std::string(), c, round);
        std::cerr << "cache: " << row << "\n";
        GatewayProcess gw;
        const std::string err =
            gw.start(o.toolbridge_bin, config(o, hit ? "memory" : "none", "", 0), 30s);
        if (!err.empty()) {
          r.ok = false;
          r.problems.push_back(fmt::format("{}: the gateway could not start: {}", row, err));
          continue;
        }
        asio::io_context io(1);
        std::unique_ptr<Target> target;
        // The same calls in flight either way: c/kBatch workers posting kBatch calls each.
        const std::size_t workers = batch ? std::max<std::size_t>(1, c / kBatch) : c;
        if (batch) {
          target =
              std::make_unique<HttpBatchTarget>(io, gw.host(), gw.port(), lookup, workers, kBatch);
        } else {
          target = std::make_unique<HttpSessionTarget>(io, gw.host(), gw.port(), lookup, c);
        }
        PathSample before, after;
        LoadResult res = run_until_done(
            io, run_closed_loop(
                    *target, {workers, o.short_mode ? 3u : 10u, win, 0, 0},
                    [&] { before = sample_path(&gw, -1); }, [&] { after = sample_path(&gw, -1); }));
        const double calls = static_cast<double>(res.calls * (batch ? kBatch : 1));
        const bool ok = before.gateway && after.gateway && before.gateway->ok &&
                        after.gateway->ok && res.calls > 0;
        const double per_call = ok ? (after.gateway->cpu_us - before.gateway->cpu_us) / calls : 0;
        if (ok) cpu[batch][hit].push_back(per_call);
        r.table.add_row(
            {bj::value(row), bj::value(static_cast<std::int64_t>(calls)), bj::value(res.seconds),
             number_or_null(0, false), bj::value(static_cast<std::int64_t>(executions(gw))),
             bj::value(metric(gw, "toolbridge_cache_hits_total")),
             bj::value(metric(gw, "toolbridge_cache_coalesced_total")),
             bj::value(static_cast<std::int64_t>(res.errors)), number_or_null(per_call, ok)});
        report_errors(r, row, res);
        report_gateway_end(r, gw);
      }
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  for (int batch = 0; batch < 2; ++batch) {
    if (cpu[batch][0].empty() || cpu[batch][1].empty()) continue;
    const double ratio = median(cpu[batch][1]) / median(cpu[batch][0]);
    // A target, not an error: the figure moves with the machine's load, so it is reported
    // (and the README says where it stands), never a failed run.
    r.table.add_note(fmt::format(
        "{}: a memory hit costs the gateway {:.2f}× the CPU of a proxied call ({:.1f} vs {:.1f} "
        "µs, medians of rounds; the target is at most 0.5×: {}).",
        batch ? fmt::format("Batches of {}", kBatch) : std::string("One call per MCP request"),
        ratio, median(cpu[batch][1]), median(cpu[batch][0]), ratio <= 0.5 ? "met" : "not met"));
  }
  r.table.add_note(
      "upstream calls: executions the fixture counted itself. hits, coalesced: the gateway's "
      "toolbridge_cache_hits_total and toolbridge_cache_coalesced_total. The CPU rows' makespan "
      "column is their measured window; gw CPU µs/call is the gateway's user + system CPU over "
      "the window divided by the calls made.");
  return r;
}

}  // namespace toolbridge::bench
