// eval: a whole evaluation through toolbridge against today's stack, in one run. The workload
// (multi-turn agents on simulated inference workers and tool servers) is the Python program a
// user could copy (bench/python/eval_agent.py), driven by bench/python/eval_bench.py; this
// scenario runs the driver and prints its table.
#include <fmt/format.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <iostream>

#include "helper_process.h"
#include "scenario_support.h"

namespace toolbridge::bench {

namespace bj = boost::json;
using namespace std::chrono_literals;

ScenarioResult run_eval(const Options& o) {
  ScenarioResult r{Table("eval", "eval", {})};
  if (::access(o.python_bin.c_str(), X_OK) != 0) {
    r.ok = false;
    r.problems.push_back("no Python at '" + o.python_bin +
                         "' (--python; scripts/setup creates .venv): eval cannot run");
    return r;
  }
  std::vector<std::string> argv{o.python_bin,
                                o.bench_python_dir + "/eval_bench.py",
                                "--table-json",
                                "--toolbridge",
                                o.toolbridge_bin,
                                "--peers-python",
                                o.peers_venv + "/bin/python"};
  if (o.short_mode) argv.push_back("--short");
  if (o.rollout_trajectories) {
    argv.push_back("--tasks");
    argv.push_back(std::to_string(o.rollout_trajectories));
  }
  if (o.rollout_calls) {
    argv.push_back("--max-turns");
    argv.push_back(std::to_string(o.rollout_calls));
  }
  if (o.rollout_scale > 0) {
    argv.push_back("--scale");
    argv.push_back(fmt::format("{:g}", o.rollout_scale));
  }
  if (!o.concurrency.empty()) {
    argv.push_back("--concurrency");
    argv.push_back(std::to_string(o.concurrency.front()));
  }
  if (!o.eval_tool_impl.empty()) {
    argv.push_back("--tool-impl");
    argv.push_back(o.eval_tool_impl);
  }
  if (o.eval_ablations) argv.push_back("--ablations");
  std::cerr << "eval: " << (o.short_mode ? "short run" : "full run")
            << " of bench/python/eval_bench.py\n";
  const HelperResult res = run_helper(argv, "", o.short_mode ? 600s : 7200s);
  boost::system::error_code ec;
  bj::value v = bj::parse(res.out, ec);
  const bj::object* doc = !ec ? v.if_object() : nullptr;
  if (!doc || !doc->contains("rows") || !doc->contains("columns")) {
    r.ok = false;
    r.problems.push_back("eval_bench.py: " + (res.error.empty() ? "no table" : res.error) + ": " +
                         res.out.substr(0, 300) + "\n" + res.stderr_tail);
    return r;
  }
  std::vector<Table::Column> columns;
  for (const auto& c : doc->at("columns").as_array()) {
    const auto& pair = c.as_array();
    columns.push_back({std::string(pair.at(0).as_string()),
                       static_cast<int>(pair.at(1).to_number<std::int64_t>())});
  }
  r.table = Table("eval", "eval: " + std::string(doc->at("title").as_string()), columns);
  for (const auto& row : doc->at("rows").as_array()) {
    const auto& cells = row.as_array();
    r.table.add_row(std::vector<bj::value>(cells.begin(), cells.end()));
  }
  for (const auto& n : doc->at("notes").as_array()) r.table.add_note(std::string(n.as_string()));
  for (const auto& p : doc->at("problems").as_array())
    r.problems.push_back(std::string(p.as_string()));
  r.ok = doc->at("ok").as_bool() && res.error.empty();
  if (!res.error.empty())
    r.problems.push_back("eval_bench.py: " + res.error + "\n" + res.stderr_tail);
  return r;
}

}  // namespace toolbridge::bench
