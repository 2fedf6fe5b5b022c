#pragma once
// The comparison scenarios. Each one starts what it needs, prints progress to stderr, returns one
// table, and stops every process it started on every path.
#include <optional>
#include <string>
#include <vector>

#include "floor.h"
#include "report.h"

namespace toolbridge::bench {

struct Options {
  bool short_mode = false;
  std::string toolbridge_bin;
  std::string fixture_bin;
  std::string node_bin = "node";
  std::string everything_js;                   // server-everything's dist/index.js
  double window_seconds = 0;                   // measured window per row; 0: the mode's default
  std::vector<std::size_t> concurrency;        // overhead levels; empty: the mode's default
  double rate = 0;                             // overhead: fixed rate (calls/s, open loop); 0: closed loop
  std::string python_bin;                      // the .venv Python with the official MCP SDK
  std::string bench_python_dir;                // bench/python: the rollout driver, FastMCP server, plotter
  std::string node_modules;                    // the repository's node_modules (supergateway, mcp-proxy)
  std::string peers_venv;                      // .venv-bench: mcp-proxy from PyPI (its own mcp pin)
  std::size_t rollout_trajectories = 0;        // 0: the mode's default
  std::size_t rollout_calls = 0;
  double rollout_scale = 0;                    // tool times × this; 0: the mode's default
  std::string rollout_server = "fixture";      // whose `sleep` tool: "fixture" or "fastmcp"
  // Admission limits in every generated gateway config, high enough never to be reached (its
  // cost when configured but idle): gateway.max_calls_in_flight, the fixture's concurrency_limit.
  bool idle_limits = false;
  // eval: the tool servers' implementation ("sdk" or "plain"; empty: the driver's default) and
  // whether to add the ablation rows.
  std::string eval_tool_impl;
  bool eval_ablations = false;
  // overhead: also run the gateway with the call trace on (rows "gateway+trace"), same run.
  bool trace = false;
  // overhead: also measure span export (gateway.otel, 100 % sampling, to a local OTLP sink).
  bool otel = false;
  // overhead: also measure recording (gateway.record) against none, and a replayed call against
  // a cache hit (table notes).
  bool record = false;
  // overhead: another build's gateway binary measured against this one, same config (pairs).
  std::string against;
  // overhead --trace/--otel/--record: window pairs per cost figure (0: each figure's default, 12
  // for most); more pairs narrow the median on a loaded machine.
  std::size_t cost_pairs = 0;
  Floor floor;
};

struct ScenarioResult {
  Table table;
  bool ok = true;                   // false: errors were seen or part of it could not run
  std::vector<std::string> problems;
};

ScenarioResult run_overhead(const Options& options);
ScenarioResult run_spawn_per_call(const Options& options);
ScenarioResult run_payload(const Options& options);
ScenarioResult run_startup(const Options& options);
ScenarioResult run_rollout(const Options& options);
ScenarioResult run_peers(const Options& options);
ScenarioResult run_sessions(const Options& options);
ScenarioResult run_contention(const Options& options);
ScenarioResult run_repair(const Options& options);
ScenarioResult run_cache(const Options& options);
ScenarioResult run_llm_routing(const Options& options);
ScenarioResult run_parse(const Options& options);
ScenarioResult run_eval(const Options& options);

}  // namespace toolbridge::bench
