// toolbridge-bench: toolbridge measured side by side with what users run today, on this machine,
// in this run. Each scenario prints one table and exits; --json writes the same rows.
#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/json/serialize.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <chrono>
#include <fstream>
#include <iostream>

#include "floor.h"
#include "helper_process.h"
#include "report.h"
#include "scenarios.h"

namespace bj = boost::json;
namespace fs = std::filesystem;
using namespace toolbridge::bench;

namespace {

std::string exe_dir() {
  std::error_code ec;
  const auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : p.parent_path().string();
}

// A file of the repository: beside the build directory the bench lives in, else under the
// current directory.
std::string repo_file(const std::string& dir, const std::string& rel) {
  for (const auto& base : {fs::path(dir).parent_path(), fs::current_path()}) {
    const fs::path p = base / rel;
    if (fs::exists(p)) return p.string();
  }
  return (fs::path(dir).parent_path() / rel).string();
}

bj::object machine_json(const Floor& floor, bool short_mode) {
  utsname u{};
  ::uname(&u);
  double load[3] = {0, 0, 0};
  ::getloadavg(load, 3);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return bj::object{{"host", host},
                    {"kernel", std::string(u.sysname) + " " + u.release},
                    {"cpus", ::sysconf(_SC_NPROCESSORS_ONLN)},
                    {"loadavg_1m", load[0]},
                    {"mode", short_mode ? "short" : "full"},
                    {"pipe_rtt_us", floor.pipe_rtt_us},
                    {"tcp_rtt_us", floor.tcp_rtt_us},
                    {"pipe_rtt_same_cpu_us", floor.pipe_same_cpu_us},
                    {"tcp_rtt_same_cpu_us", floor.tcp_same_cpu_us},
                    {"floor_samples", floor.samples}};
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  const std::string dir = exe_dir();
  Options options;
  options.toolbridge_bin = dir + "/toolbridge";
  options.fixture_bin = dir + "/toolbridge-fixture";
  options.everything_js = repo_file(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
  options.python_bin = repo_file(dir, ".venv/bin/python");
  options.bench_python_dir = repo_file(dir, "bench/python");
  options.node_modules = repo_file(dir, "node_modules");
  options.peers_venv = repo_file(dir, ".venv-bench");
  std::string json_path;
  std::string png_path;
  int floor_samples = 0;

  CLI::App app{"toolbridge-bench: the gateway measured against what agents use today, on this machine"};
  app.require_subcommand(1);
  app.fallthrough();
  app.add_flag("--short", options.short_mode, "a few seconds per scenario (CI)");
  app.add_option("--json", json_path, "also write the rows as JSON to FILE");
  app.add_option("--png", png_path, "also draw the results to FILE (needs matplotlib in .venv-bench)");
  app.add_option("--toolbridge", options.toolbridge_bin, "toolbridge binary")->capture_default_str();
  app.add_option("--fixture", options.fixture_bin, "toolbridge-fixture binary")->capture_default_str();
  app.add_option("--node", options.node_bin, "node executable for server-everything")->capture_default_str();
  app.add_option("--everything", options.everything_js, "server-everything's dist/index.js")->capture_default_str();
  app.add_flag("--idle-limits", options.idle_limits,
               "admission limits configured but never reached (their overhead; docs/admission.md)");
  app.add_flag("--trace", options.trace,
               "overhead: also measure the call trace's CPU cost (two gateways, alternating windows; table notes)");
  app.add_flag("--otel", options.otel,
               "overhead: also measure OpenTelemetry span export's CPU cost (100 % sampling to a local OTLP "
               "sink; two gateways, alternating windows; table notes)");
  app.add_option("--pairs", options.cost_pairs,
                 "overhead --trace/--otel/--record: alternating window pairs per cost figure (default 12)");
  app.add_flag("--record", options.record,
               "overhead: also measure recording's CPU cost and a replayed call against a cache hit "
               "(pairs of gateways, alternating windows; table notes)");
  app.add_option(
      "--against", options.against,
      "overhead: another build's toolbridge binary, measured against this one with the same "
      "config (pairs of gateways, alternating windows; a table note)");
  app.add_option("--window", options.window_seconds, "seconds measured per row (default: 1 short, 5 full)");
  app.add_option("--concurrency", options.concurrency, "overhead, peers: concurrency levels (default 1 8 64 256 1024 4096)")
      ->delimiter(',');
  app.add_option(
      "--rate", options.rate,
      "overhead (and its --trace/--otel/--record pairs), peers: open loop at this many calls/s "
      "(latency from each call's scheduled time)");
  app.add_option("--python", options.python_bin, "Python with the official MCP SDK (rollout, FastMCP server)")
      ->capture_default_str();
  app.add_option("--node-modules", options.node_modules, "node_modules with supergateway and mcp-proxy")
      ->capture_default_str();
  app.add_option("--peers-venv", options.peers_venv, "virtualenv with mcp-proxy from PyPI and matplotlib (--png)")->capture_default_str();
  app.add_option("--trajectories", options.rollout_trajectories, "rollout: concurrent trajectories (default 64, short 8)");
  app.add_option("--calls", options.rollout_calls, "rollout: calls per trajectory (default 10, short 5)");
  app.add_option("--scale", options.rollout_scale, "rollout: tool times multiplied by this (default 1, short 0.05)");
  app.add_option("--server", options.rollout_server,
                 "rollout: the server with the sleep tool, fixture (C++) or fastmcp (Python, bench/python)")
      ->check(CLI::IsMember({"fixture", "fastmcp"}))
      ->capture_default_str();
  app.add_option("--tool-impl", options.eval_tool_impl,
                 "eval: tool servers on the official MCP SDK (sdk, default) or a stdlib stdio loop (plain)")
      ->check(CLI::IsMember({"sdk", "plain"}));
  app.add_flag("--ablations", options.eval_ablations,
               "eval: add the rows with one toolbridge feature off (router, admission, cache, repair)");
  app.add_option("--floor-samples", floor_samples, "round trips per floor measurement (median reported)");
  struct Scenario {
    const char* name;
    const char* help;
    ScenarioResult (*run)(const Options&);
  };
  const std::vector<Scenario> scenarios{
      {"overhead", "echo through the gateway vs a direct stdio session at concurrency 1..4096", run_overhead},
      {"payload", "1 KB .. 10 MB results through the gateway: throughput and CPU per MB", run_payload},
      {"spawn-per-call", "spawn + initialize + call + exit per call vs the gateway", run_spawn_per_call},
      {"startup", "K slow-initialising servers: one by one vs parallel start, with and without a cap", run_startup},
      {"rollout", "N trajectories x M calls (search/scrape/python latencies): makespan vs the ideal", run_rollout},
      {"peers", "echo through toolbridge vs supergateway and mcp-proxy (npm, PyPI)", run_peers},
      {"sessions", "first call of a new per_session session, with and without warm spares", run_sessions},
      {"contention", "2 runs x 60 trajectories on a server that slows with load: no limit, static, adaptive",
       run_contention},
      {"repair", "gateway CPU per call with repair and validation off, on (warn), enforce, repairing", run_repair},
      {"cache", "a rollout repeating Zipf-distributed searches: no cache, memory, disk, Redis, warm disk; "
                "100 identical calls; a memory hit's gateway CPU vs a proxied call", run_cache},
      {"llm-routing", "64 trajectories x 30 turns on 4 simulated inference workers: toolbridge's policies vs sglang-router",
       run_llm_routing},
      {"parse", "the parse corpus through POST /v1/parse vs the Python regex reference: accuracy, time per turn",
       run_parse},
      {"eval", "a whole evaluation (N multi-turn agent tasks, scripted model, search/scrape/sandbox "
               "servers) through today's stack and through toolbridge; --trajectories = tasks, --calls = "
               "max turns, --scale, --concurrency (first value) = tasks at once",
       run_eval},
  };
  std::vector<CLI::App*> commands;
  for (const auto& s : scenarios) commands.push_back(app.add_subcommand(s.name, s.help));
  auto* all = app.add_subcommand("all", "every scenario, one table each");
  auto* floor_only = app.add_subcommand("floor", "only the machine floor");
  CLI11_PARSE(app, argc, argv);

  for (const auto& path : {options.toolbridge_bin, options.fixture_bin}) {
    if (::access(path.c_str(), X_OK) != 0) {
      std::cerr << "toolbridge-bench: cannot execute '" << path << "' (build it, or pass --toolbridge/--fixture)\n";
      return 2;
    }
  }

  // The floor first, before any thread exists (it forks).
  if (floor_samples <= 0) floor_samples = options.short_mode ? 1000 : 5000;
  if (std::string err = measure_floor(floor_samples, options.floor); !err.empty()) {
    std::cerr << "toolbridge-bench: measuring the floor failed: " << err << "\n";
    return 1;
  }
  bj::object doc{{"machine", machine_json(options.floor, options.short_mode)}};
  const Floor& f = options.floor;
  Table floor("floor", "machine floor (median of " + std::to_string(floor_samples) + " one-byte round trips with a forked child)",
              {{"measure"}, {"same CPU µs", 1}, {"cross CPU µs", 1}});
  floor.add_row({bj::value("pipe round trip"), bj::value(f.pipe_same_cpu_us), bj::value(f.pipe_rtt_us)});
  floor.add_row({bj::value("loopback TCP round trip (TCP_NODELAY)"), bj::value(f.tcp_same_cpu_us), bj::value(f.tcp_rtt_us)});
  floor.add_row({bj::value("TCP + pipe (gateway floor)"), bj::value(f.tcp_same_cpu_us + f.pipe_same_cpu_us),
                 bj::value(f.tcp_rtt_us + f.pipe_rtt_us)});
  floor.add_note("Both processes pinned to one CPU, then to two different CPUs. A cross-CPU wake-up is the expensive "
                 "case on these VMs and the one the p50/floor ratios use.");
  if (f.cpus < 2) floor.add_note("Only one CPU is available: the cross-CPU column repeats the same-CPU case.");
  const auto& m = doc["machine"].as_object();
  std::cout << fmt::format("toolbridge-bench {} mode on {} ({}, {} CPUs, load {:.2f})\n",
                           options.short_mode ? "short" : "full", std::string(m.at("host").as_string()),
                           std::string(m.at("kernel").as_string()), m.at("cpus").as_int64(),
                           m.at("loadavg_1m").as_double());
  floor.print(std::cout);

  bj::array tables{floor.to_json()};
  bool ok = true;
  if (!*floor_only) {
    for (std::size_t i = 0; i < scenarios.size(); ++i) {
      if (!*all && !*commands[i]) continue;
      ScenarioResult result{Table(scenarios[i].name, scenarios[i].name, {})};
      try {
        result = scenarios[i].run(options);
      } catch (const std::exception& e) {
        result.ok = false;
        result.problems.push_back(std::string("aborted: ") + e.what());
      }
      result.table.print(std::cout);
      for (const auto& p : result.problems) std::cout << "! " << p << "\n";
      std::cout.flush();
      bj::object t = result.table.to_json();
      bj::array problems;
      for (const auto& p : result.problems) problems.push_back(bj::string(p));
      t["problems"] = std::move(problems);
      t["ok"] = result.ok;
      tables.push_back(std::move(t));
      ok = ok && result.ok;
    }
  }
  doc["tables"] = std::move(tables);
  doc["ok"] = ok;
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << bj::serialize(doc) << "\n";
    if (!out) {
      std::cerr << "toolbridge-bench: cannot write " << json_path << "\n";
      return 1;
    }
  }
  if (!png_path.empty()) {
    // The plotter reads the same document --json writes; a plotting failure is reported, and
    // fails the run, but never loses the tables above.
    const std::string plot_python = options.peers_venv + "/bin/python";
    HelperResult plot = run_helper({plot_python, options.bench_python_dir + "/plot.py", "/dev/stdin", png_path},
                                   bj::serialize(doc), std::chrono::seconds(120));
    if (!plot.error.empty()) {
      std::cerr << "toolbridge-bench: --png failed: " << plot.error << "\n" << plot.stderr_tail << "\n";
      return 1;
    }
    std::cerr << "toolbridge-bench: wrote " << png_path << "\n";
  }
  return ok ? 0 : 1;
}
