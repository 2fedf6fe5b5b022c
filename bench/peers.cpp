// peers: the overhead scenario's echo workload through gateways a user might pick instead of
// toolbridge, each in front of the same fixture binary over stdio, same client, same levels.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>

#include "peer_process.h"
#include "scenario_support.h"

namespace toolbridge::bench {

namespace asio = boost::asio;
namespace bj = boost::json;
using namespace std::chrono_literals;

namespace {

struct Peer {
  std::string name;               // as a user would install it
  std::string mode;               // how it is run
  std::vector<std::string> argv;  // empty for toolbridge; "{port}" is replaced
  std::string missing;            // why it cannot run here, if it cannot
};

std::vector<Peer> peers(const Options& o) {
  const std::string fixture = o.fixture_bin;
  const std::string supergateway = o.node_modules + "/supergateway/dist/index.js";
  const std::string npm_proxy = o.node_modules + "/mcp-proxy/dist/bin/mcp-proxy.mjs";
  std::vector<Peer> list{
      {"toolbridge", "one shared fixture, requests multiplexed", {}, ""},
      {"supergateway 4.0.0 (npm)",
       "--stateful: one fixture per session",
       {o.node_bin, supergateway, "--stdio", fixture, "--outputTransport", "streamableHttp",
        "--stateful", "--port", "{port}", "--logLevel", "none"},
       ""},
      {"supergateway 4.0.0 (npm)",
       "stateless (default): one fixture per request",
       {o.node_bin, supergateway, "--stdio", fixture, "--outputTransport", "streamableHttp",
        "--port", "{port}", "--logLevel", "none"},
       ""},
      {"mcp-proxy 6.7.19 (npm)",
       "--server stream: one fixture per session",
       {o.node_bin, npm_proxy, "--host", "127.0.0.1", "--port", "{port}", "--server", "stream",
        "--", fixture},
       ""},
      {"mcp-proxy 0.13.0 (PyPI)",
       "one fixture per session",
       {o.peers_venv + "/bin/mcp-proxy", "--host", "127.0.0.1", "--port", "{port}", "--log-level",
        "WARNING", fixture},
       ""},
  };
  for (auto& p : list) {
    if (p.argv.empty()) continue;
    const std::string& entry = p.argv[0] == o.node_bin ? p.argv[1] : p.argv[0];
    if (!std::filesystem::exists(entry))
      p.missing = "not installed (" + entry + " is missing; run scripts/setup)";
  }
  return list;
}

}  // namespace

ScenarioResult run_peers(const Options& o) {
  const std::string title =
      o.rate > 0 ? fmt::format("peers: fixture echo through toolbridge and through other MCP gateways, fixed rate "
                               "{:g} calls/s (open loop)",
                               o.rate)
                 : std::string("peers: fixture echo through toolbridge and through other MCP gateways");
  ScenarioResult r{Table("peers", title,
                         {{"gateway"},
                          {"mode"},
                          {"conc"},
                          {"calls"},
                          {"calls/s", 0},
                          {"p50 µs", 0},
                          {"p90 µs", 0},
                          {"p99 µs", 0},
                          {"max µs", 0},
                          {"errors"},
                          {"gw CPU µs/call", 1},
                          {"gw RSS MiB", 1},
                          {"toolbridge calls/s ÷ this", 1},
                          {"note"}})};
  std::vector<std::size_t> levels = o.concurrency;
  if (levels.empty())
    levels =
        o.short_mode ? std::vector<std::size_t>{1, 8} : std::vector<std::size_t>{1, 8, 64, 256, 1024, 4096};
  const auto win = window(o, 0.5, 3.0);
  const std::size_t warmup = o.short_mode ? 2 : 5;
  std::map<std::size_t, double> toolbridge_rate;

  auto add_row = [&](const Peer& p, std::size_t c, const LoadResult* res, const ProcSample* s0,
                     const ProcSample* s1, std::string note) {
    const double rate =
        res && res->seconds > 0 ? static_cast<double>(res->latency.count()) / res->seconds : 0;
    const bool measured = res && res->latency.count() > 0;
    const bool cpu = measured && s0 && s1 && s0->ok && s1->ok && res->calls > 0;
    const double tb = toolbridge_rate.count(c) ? toolbridge_rate[c] : 0;
    r.table.add_row(
        {bj::value(p.name), bj::value(p.mode), bj::value(static_cast<std::int64_t>(c)),
         res ? bj::value(static_cast<std::int64_t>(res->calls)) : bj::value(nullptr),
         number_or_null(rate, res != nullptr),
         number_or_null(measured ? res->latency.percentile(50) : 0, measured),
         number_or_null(measured ? res->latency.percentile(90) : 0, measured),
         number_or_null(measured ? res->latency.percentile(99) : 0, measured),
         number_or_null(measured ? res->latency.max() : 0, measured),
         res ? bj::value(static_cast<std::int64_t>(res->errors)) : bj::value(nullptr),
         number_or_null(cpu ? (s1->cpu_us - s0->cpu_us) / static_cast<double>(res->calls) : 0, cpu),
         number_or_null(cpu ? s1->rss_mib : 0, cpu),
         number_or_null(rate > 0 ? tb / rate : 0, rate > 0 && tb > 0), bj::value(note)});
    if (res) {
      std::cerr << fmt::format("  {} [{}] c={}: {} calls, {:.0f}/s, {} errors\n", p.name, p.mode, c,
                               res->calls, rate, res->errors);
    }
  };

  // One row per level; `host`/`port` reach the gateway under test, `pid` is its own process.
  auto measure = [&](const Peer& p, const std::string& tool, unsigned short port, pid_t pid,
                     const std::function<std::string()>& exited) {
    {
      // Unmeasured first: a JIT (node) or a lazy import (Python) gets warm before any row.
      asio::io_context io(1);
      HttpSessionTarget target(io, "127.0.0.1", port, {tool, R"({"text":"hello"})", 5}, 8);
      const auto warm = o.short_mode ? 200ms : 1000ms;
      (void)run_until_done(io, run_closed_loop(target, {8, 1, warm, 0}, {}, {}));
    }
    for (std::size_t c : levels) {
      if (std::string dead = exited(); !dead.empty()) {
        add_row(p, c, nullptr, nullptr, nullptr,
                "exited during the run: " + dead.substr(0, dead.find('\n')));
        if (p.argv.empty()) {
          r.ok = false;
          r.problems.push_back("toolbridge " + dead);
        } else {
          r.problems.push_back(p.name + " [" + p.mode + "] " + dead);
        }
        continue;
      }
      asio::io_context io(1);
      HttpSessionTarget target(io, "127.0.0.1", port, {tool, R"({"text":"hello"})", 5}, c);
      ProcSample s0, s1;
      LoadResult res =
          run_until_done(io, run_closed_loop(
                                 target, {c, warmup, win, 0, o.rate}, [&] { s0 = sample_process(pid); },
                                 [&] { s1 = sample_process(pid); }));
      std::string note;
      if (res.errors > 0) {
        note = fmt::format("{} errors; first: {}", res.errors, res.first_error.substr(0, 120));
        std::replace(note.begin(), note.end(), '\n', ' ');
        std::replace(note.begin(), note.end(), '|', '/');
        r.problems.push_back(fmt::format("{} [{}] c={}: {} error(s); first: {}", p.name, p.mode, c,
                                         res.errors, res.first_error));
        if (p.argv.empty()) r.ok = false;  // only toolbridge's own errors fail the bench
      }
      if (p.argv.empty())
        toolbridge_rate[c] =
            res.seconds > 0 ? static_cast<double>(res.latency.count()) / res.seconds : 0;
      add_row(p, c, &res, &s0, &s1, note);
    }
  };

  for (const Peer& p : peers(o)) {
    std::cerr << fmt::format("peers: {} [{}]\n", p.name, p.mode);
    if (p.argv.empty()) {
      GatewayProcess gw;
      const std::string err = gw.start(o.toolbridge_bin, gateway_config(o, false), 30s);
      if (!err.empty()) {
        r.ok = false;
        r.problems.push_back("toolbridge could not start: " + err);
        for (std::size_t c : levels) add_row(p, c, nullptr, nullptr, nullptr, "could not start");
        continue;
      }
      measure(p, "fixture__echo", gw.port(), gw.pid(), [&] { return gw.exited(); });
      report_gateway_end(r, gw);
      continue;
    }
    // A peer that setup should have installed, or that cannot start, fails the run: otherwise its
    // rows could rot unnoticed in CI. Its errors under load do not.
    if (!p.missing.empty()) {
      r.ok = false;
      r.problems.push_back(p.name + ": " + p.missing);
      for (std::size_t c : levels) add_row(p, c, nullptr, nullptr, nullptr, p.missing);
      continue;
    }
    const unsigned short port = free_port();
    std::vector<std::string> argv = p.argv;
    for (auto& a : argv) {
      if (a == "{port}") a = std::to_string(port);
    }
    PeerProcess peer;
    const std::string err = peer.start(argv, port, 30s);
    if (!err.empty()) {
      r.ok = false;
      r.problems.push_back(p.name + " [" + p.mode + "] could not start: " + err);
      for (std::size_t c : levels)
        add_row(p, c, nullptr, nullptr, nullptr,
                "could not start: " + err.substr(0, err.find('\n')));
      continue;
    }
    measure(p, "echo", port, peer.pid(), [&] { return peer.exited(); });
    const std::string how = peer.stop();
    if (!how.empty() && how.find("SIGKILL sent") != std::string::npos)
      r.problems.push_back(p.name + " [" + p.mode + "]: " + how);
  }
  if (o.rate > 0) {
    r.table.add_note(fmt::format("Open loop at {:g} calls/s: latency counts from each call's scheduled time "
                                 "(no coordinated omission); calls/s below the rate means it was not kept.",
                                 o.rate));
  }
  r.table.add_note(fmt::format(
      "{}{} s measured per row after {} warm-up calls per worker (and, per gateway, {} unmeasured "
      "at concurrency 8 before its first row); one MCP session and keep-alive connection per worker (the same "
      "client for every gateway). gw CPU and RSS: the gateway's own process (not the fixtures it spawned). "
      "Errors of other gateways under load are reported, not counted as a failure of the bench; a gateway "
      "that is missing or cannot start is.",
      o.rate > 0 ? "" : "Closed loop, ", std::chrono::duration<double>(win).count(), warmup,
      o.short_mode ? "0.2 s" : "1 s"));
  return r;
}

}  // namespace toolbridge::bench
