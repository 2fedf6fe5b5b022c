// llm-routing: a multi-turn agent workload on 4 simulated inference workers
// (tests/llm_worker/worker.py), routed by toolbridge's policies and by sglang-router's
// cache-aware policy. Each of N concurrent trajectories makes M turns; every turn sends the
// shared ~4k-token system prompt, the whole history and one new tool result, streams a short
// completion, then "runs a tool" for a while. What matters: prompt tokens the workers had to
// compute (not in their prefix cache), makespan, time to first token, load balance.
#include <fmt/format.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include "peer_process.h"
#include "scenario_support.h"
#include "transport/http_client.h"

namespace toolbridge::bench {

namespace asio = boost::asio;
namespace bj = boost::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr const char* kModel = "sim-model";

struct Workload {
  std::size_t trajectories = 64;
  std::size_t turns = 30;
  std::size_t system_tokens = 4000;
  std::size_t result_tokens = 150;  // a tool result
  std::size_t output_tokens = 16;   // a short completion
  std::chrono::milliseconds tool_ms{200};
  std::size_t workers = 4;
};

// What every worker is told (docs/llm-routing.md states the same).
std::vector<std::string> worker_args(const Workload& w) {
  return {"--model",
          kModel,
          "--output-tokens",
          std::to_string(w.output_tokens),
          "--prefill-us-per-token",
          "20",
          "--decode-ms-per-token",
          "2",
          "--max-running",
          "64",
          "--cache-tokens",
          "256000",
          "--block",
          "16"};
}

struct Outcome {
  double makespan_s = 0;
  Latencies ttft_us;
  std::uint64_t requests = 0;
  std::uint64_t errors = 0;
  std::string first_error;
};

std::string json_escape_free_words(const std::string& prefix, std::size_t n) {
  std::string out;
  out.reserve(n * (prefix.size() + 6));
  for (std::size_t i = 0; i < n; ++i) {
    if (i) out += ' ';
    out += prefix;
    out += std::to_string(i);
  }
  return out;
}

void fail(Outcome& out, std::string why) {
  ++out.errors;
  if (out.first_error.empty()) out.first_error = std::move(why);
}

asio::awaitable<void> trajectory(transport::HttpClient& client, const transport::Url& base,
                                 std::size_t t, const Workload& w, const std::string& system,
                                 Outcome& out) {
  auto ex = co_await asio::this_coro::executor;
  const std::string answer = json_escape_free_words("w", w.output_tokens);
  std::string messages = R"([{"role":"system","content":")" + system + "\"}";
  for (std::size_t turn = 0; turn < w.turns; ++turn) {
    messages += R"(,{"role":"user","content":"tool result )";
    messages += json_escape_free_words(fmt::format("t{}r{}x", t, turn), w.result_tokens);
    messages += "\"}";
    transport::HttpRequest req;
    req.verb = transport::http::verb::post;
    req.url = base;
    req.url.target = "/v1/chat/completions";
    req.headers = {{"Content-Type", "application/json"},
                   {"X-Toolbridge-Trajectory", fmt::format("traj-{}", t)}};
    req.body = fmt::format(R"({{"model":"{}","stream":true,"max_tokens":{},"messages":{}]}})",
                           kModel, w.output_tokens, messages);
    req.header_timeout = 600s;
    req.body_timeout = 600s;
    const auto t0 = Clock::now();
    transport::HttpExchange hx = co_await client.send(req);
    ++out.requests;
    bool ok = !hx.failed();
    if (ok) ok = co_await hx.read_header();
    if (!ok) {
      fail(out, hx.error().message);
    } else if (hx.status() != 200) {
      std::string body;
      co_await hx.read_body(body, 1 << 16);
      fail(out, fmt::format("HTTP {}: {}", hx.status(), body.substr(0, 300)));
    } else {
      bool first = true;
      while (true) {
        std::string_view piece = co_await hx.read_some();
        if (piece.empty()) break;
        if (first) {
          out.ttft_us.add(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
          first = false;
        }
      }
      if (!hx.done()) fail(out, "stream cut: " + hx.error().message);
    }
    messages += R"(,{"role":"assistant","content":")" + answer + "\"}";
    // The tool runs; trajectories drift apart by a few ms so turns do not stay in lockstep.
    asio::steady_timer timer(ex, w.tool_ms + std::chrono::milliseconds((t * 7 + turn * 13) % 50));
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

Outcome run_workload(const std::string& host, unsigned short port, const Workload& w) {
  Outcome out;
  asio::io_context io;
  transport::HttpClientOptions co;
  co.max_connections = w.trajectories * 2;
  co.max_idle = w.trajectories * 2;
  transport::HttpClient client(io.get_executor(), co);
  transport::Url base;
  base.host = host;
  base.port = std::to_string(port);
  base.target = "/";
  const std::string system = json_escape_free_words("s", w.system_tokens);
  const auto start = Clock::now();
  for (std::size_t t = 0; t < w.trajectories; ++t)
    asio::co_spawn(io, trajectory(client, base, t, w, system, out), asio::detached);
  io.run();
  out.makespan_s = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

// GET or POST on a worker, the answer's body ("" on failure).
std::string worker_call(unsigned short port, transport::http::verb verb, const std::string& path) {
  asio::io_context io;
  transport::HttpClient client(io.get_executor(), {});
  transport::HttpRequest req;
  req.verb = verb;
  req.url.host = "127.0.0.1";
  req.url.port = std::to_string(port);
  req.url.target = path;
  if (verb == transport::http::verb::post) {
    req.headers = {{"Content-Type", "application/json"}};
    req.body = "{}";
  }
  auto resp = run_until_done(io, client.fetch(req, 1 << 20));
  return resp.error || resp.status != 200 ? std::string() : resp.body;
}

struct WorkerTotals {
  double computed = 0, prompt = 0, cached = 0;
  double max_requests = 0, mean_requests = 0;
  bool ok = true;
};

WorkerTotals worker_totals(const std::vector<unsigned short>& ports) {
  WorkerTotals t;
  double sum = 0;
  for (unsigned short p : ports) {
    const std::string body = worker_call(p, transport::http::verb::get, "/stats");
    boost::system::error_code ec;
    bj::value v = bj::parse(body, ec);
    if (ec || !v.is_object()) {
      t.ok = false;
      continue;
    }
    const auto& o = v.get_object();
    t.computed += o.at("computed_tokens").to_number<double>();
    t.prompt += o.at("prompt_tokens").to_number<double>();
    t.cached += o.at("cached_tokens").to_number<double>();
    const double n = o.at("requests").to_number<double>();
    t.max_requests = std::max(t.max_requests, n);
    sum += n;
  }
  t.mean_requests = ports.empty() ? 0 : sum / static_cast<double>(ports.size());
  return t;
}

std::string gateway_yaml(const std::vector<unsigned short>& ports, const std::string& routing,
                         const std::string& extra) {
  std::string y = fmt::format(
      "gateway:\n  log_level: warn\n  max_connections_per_client: 4096\nservers: {{}}\nmodels:\n"
      "  {}:\n    routing: {}\n{}    workers:\n",
      kModel, routing, extra);
  for (std::size_t i = 0; i < ports.size(); ++i)
    y += fmt::format("      - {{url: 'http://127.0.0.1:{}', name: w{}}}\n", ports[i], i);
  return y;
}

}  // namespace

ScenarioResult run_llm_routing(const Options& o) {
  Workload w;
  if (o.short_mode) {
    w.trajectories = 16;
    w.turns = 8;
    w.tool_ms = 50ms;
  }
  if (o.rollout_trajectories) w.trajectories = o.rollout_trajectories;
  if (o.rollout_calls) w.turns = o.rollout_calls;
  ScenarioResult r{Table(
      "llm-routing",
      fmt::format("llm-routing: {} trajectories × {} turns, {}-token shared system prompt, {} "
                  "simulated workers (tests/llm_worker)",
                  w.trajectories, w.turns, w.system_tokens, w.workers),
      {{"router"},
       {"requests"},
       {"uncached prompt tokens"},
       {"vs round robin", 2},
       {"cached %", 1},
       {"makespan s", 2},
       {"TTFT p50 ms", 1},
       {"TTFT p99 ms", 1},
       {"imbalance max/mean", 2},
       {"router CPU µs/req", 0},
       {"workers CPU µs/req", 0},
       {"errors"}})};

  const std::string worker_py =
      std::filesystem::weakly_canonical(o.bench_python_dir + "/../../tests/llm_worker/worker.py")
          .string();
  std::vector<std::unique_ptr<PeerProcess>> workers;
  std::vector<unsigned short> ports;
  for (std::size_t i = 0; i < w.workers; ++i) {
    const unsigned short port = free_port();
    std::vector<std::string> argv{o.python_bin,         worker_py, "--port",
                                  std::to_string(port), "--name",  fmt::format("w{}", i)};
    for (auto& a : worker_args(w)) argv.push_back(a);
    auto p = std::make_unique<PeerProcess>();
    if (std::string err = p->start(argv, port, 30s); !err.empty()) {
      r.ok = false;
      r.problems.push_back("simulated worker: " + err);
      return r;
    }
    workers.push_back(std::move(p));
    ports.push_back(port);
  }

  double rr_computed = 0;
  // The simulated workers' own CPU (all four), to show they are not what limits the run.
  auto workers_cpu = [&] {
    double sum = 0;
    for (const auto& p : workers) {
      const ProcSample x = sample_process(p->pid());
      if (!x.ok) return -1.0;
      sum += x.cpu_us;
    }
    return sum;
  };
  double workers_cpu_before = -1;
  auto add_row = [&](const std::string& name, const Outcome& out, const WorkerTotals& t,
                     double cpu_us) {
    if (name == "toolbridge round_robin") rr_computed = t.computed;
    const double ok_requests = static_cast<double>(out.requests - out.errors);
    const double workers_now = workers_cpu();
    const bool workers_ok = workers_now >= 0 && workers_cpu_before >= 0 && ok_requests > 0;
    r.table.add_row(
        {bj::value(name), bj::value(static_cast<std::int64_t>(out.requests)),
         bj::value(static_cast<std::int64_t>(t.computed)),
         number_or_null(t.computed > 0 ? rr_computed / t.computed : 0,
                        rr_computed > 0 && t.computed > 0),
         bj::value(t.prompt > 0 ? 100.0 * t.cached / t.prompt : 0.0), bj::value(out.makespan_s),
         bj::value(out.ttft_us.percentile(50) / 1000), bj::value(out.ttft_us.percentile(99) / 1000),
         bj::value(t.mean_requests > 0 ? t.max_requests / t.mean_requests : 0.0),
         number_or_null(ok_requests > 0 ? cpu_us / ok_requests : 0, cpu_us >= 0 && ok_requests > 0),
         number_or_null(workers_ok ? (workers_now - workers_cpu_before) / ok_requests : 0,
                        workers_ok),
         bj::value(static_cast<std::int64_t>(out.errors))});

    if (out.errors) {
      r.ok = false;
      r.problems.push_back(fmt::format("{}: {} of {} requests failed; first: {}", name, out.errors,
                                       out.requests, out.first_error));
    }
    std::cerr << fmt::format(
        "  {}: {:.0f} uncached tokens, makespan {:.2f} s, TTFT p99 {:.1f} ms\n", name, t.computed,
        out.makespan_s, out.ttft_us.percentile(99) / 1000);
  };
  auto reset_workers = [&] {
    for (unsigned short p : ports) worker_call(p, transport::http::verb::post, "/reset");
    workers_cpu_before = workers_cpu();
  };

  // `extra`: more keys of the model ("    load_factor: 2\n"), `label` names them in the row.
  auto toolbridge_row = [&](const std::string& routing, const std::string& extra = {},
                            const std::string& label = {}) {
    reset_workers();
    GatewayProcess gw;
    if (std::string err = gw.start(o.toolbridge_bin, gateway_yaml(ports, routing, extra), 60s);
        !err.empty()) {
      r.ok = false;
      r.problems.push_back("toolbridge " + routing + ": " + err);
      return;
    }
    std::cerr << "llm-routing: toolbridge " << routing << "\n";
    const ProcSample before = gw.sample();
    const Outcome out = run_workload(gw.host(), gw.port(), w);
    const ProcSample after = gw.sample();
    add_row("toolbridge " + routing + (label.empty() ? "" : " " + label), out, worker_totals(ports),
            before.ok && after.ok ? after.cpu_us - before.cpu_us : -1);
    report_gateway_end(r, gw);
  };

  // `extra`: more sglang-router arguments, `label` names them in the row.
  auto sglang_row = [&](const std::vector<std::string>& extra, const std::string& label) {
    reset_workers();
    const std::string py = o.peers_venv + "/bin/python";
    if (::access(py.c_str(), X_OK) != 0) {
      r.problems.push_back("no " + py +
                           " (scripts/setup installs sglang-router there): row skipped");
      return;
    }
    const unsigned short port = free_port();
    std::vector<std::string> argv{py,
                                  "-m",
                                  "sglang_router.launch_router",
                                  "--host",
                                  "127.0.0.1",
                                  "--port",
                                  std::to_string(port),
                                  "--policy",
                                  "cache_aware",
                                  "--log-level",
                                  "warn",
                                  "--worker-urls"};
    for (unsigned short p : ports) argv.push_back(fmt::format("http://127.0.0.1:{}", p));
    for (const auto& a : extra) argv.push_back(a);
    PeerProcess router;
    if (std::string err = router.start(argv, port, 60s); !err.empty()) {
      r.ok = false;
      r.problems.push_back("sglang-router: " + err);
      return;
    }
    // It registers its workers after it listens: wait until it routes a request.
    const auto deadline = Clock::now() + 30s;
    Workload probe = w;
    probe.trajectories = 1;
    probe.turns = 1;
    probe.tool_ms = 0ms;
    while (Clock::now() < deadline && run_workload("127.0.0.1", port, probe).errors > 0)
      std::this_thread::sleep_for(200ms);
    reset_workers();
    std::cerr << "llm-routing: sglang-router cache_aware " << label << "\n";
    const ProcSample before = sample_process(router.pid());
    const Outcome out = run_workload("127.0.0.1", port, w);
    const ProcSample after = sample_process(router.pid());
    add_row("sglang-router cache_aware" + (label.empty() ? "" : " " + label), out,
            worker_totals(ports), before.ok && after.ok ? after.cpu_us - before.cpu_us : -1);
    router.stop();
  };

  toolbridge_row("round_robin");
  toolbridge_row("least_outstanding");
  sglang_row({}, "");
  // Its balancing starts when the busiest worker has 64 more requests than the idlest, which 64
  // trajectories never reach: the same policy with a threshold this load can cross.
  sglang_row({"--balance-abs-threshold", "4"}, "(balance_abs_threshold 4)");
  toolbridge_row("affinity");
  toolbridge_row("prefix_aware");
  // The thresholds' defaults against tighter ones (docs/llm-routing.md: why).
  toolbridge_row("affinity", "    load_factor: 1.25\n", "(load_factor 1.25)");
  toolbridge_row("prefix_aware", "    prefix_balance_slack: 1\n", "(prefix_balance_slack 1)");
  for (auto& p : workers) p->stop();
  r.table.add_note(
      "uncached prompt tokens: summed over the workers (their prefix caches: 256k tokens each, "
      "16-token blocks, LRU); vs round robin: how many times fewer; imbalance: the busiest "
      "worker's requests over the mean; router CPU: the router process's own CPU per request; "
      "workers CPU: the four simulated workers' CPU per request");
  return r;
}

}  // namespace toolbridge::bench
