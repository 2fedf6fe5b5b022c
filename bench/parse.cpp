// parse: the parse corpus (tests/parse_corpus/, 343 model outputs in seven formats) through
// POST /v1/parse end to end against the Python regex reference (bench/python/parse_reference.py),
// same run: accuracy (calls extracted exactly) and time per turn.
#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "gateway_process.h"
#include "helper_process.h"
#include "parse/extractor.h"
#include "parse/tool_index.h"
#include "scenario_support.h"
#include "scenarios.h"
#include "upstream/instance.h"

namespace toolbridge::bench {

namespace bj = boost::json;
using namespace std::chrono_literals;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double thread_cpu_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// The gateway's own parser in this process (extract, then resolve against the corpus's tools):
// CPU µs per turn, best of `rounds`.
double in_process_us(const std::string& corpus, const std::string& tools_path, int rounds) {
  const bj::object tools = bj::parse(read_file(tools_path)).as_object();
  upstream::Catalog lists;
  for (const auto& t : tools.at("tools").as_array()) lists.tools.push_back(t);
  catalog::Catalog catalog;
  const std::string server(tools.at("server").as_string());
  catalog.rebuild(std::vector<catalog::Catalog::Source>{{server, &lists}},
                  config::ToolNaming::kPrefixed, "__");
  config::Config config;
  config.servers.emplace_back().name = server;
  parse::ToolIndexCache cache;
  std::vector<std::pair<const parse::Format*, std::string>> turns;
  std::istringstream lines(read_file(corpus));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const bj::object c = bj::parse(line).as_object();
    turns.emplace_back(parse::find_format(c.at("format").as_string()),
                       std::string(c.at("text").as_string()));
  }
  double best = 0;
  std::size_t sink = 0;
  for (int round = 0; round < rounds; ++round) {
    const double start = thread_cpu_us();
    for (const auto& [format, text] : turns) {
      const parse::ToolIndex& index = cache.get(catalog, config);
      const parse::Extraction x = parse::extract(*format, text);
      for (const auto& raw : x.calls) {
        parse::ParsedCall call;
        sink += index.resolve(raw, call) ? call.arguments.size() : 0;
      }
    }
    const double per_turn = (thread_cpu_us() - start) / static_cast<double>(turns.size());
    if (round == 0 || per_turn < best) best = per_turn;
  }
  return sink > 0 ? best : 0;
}

double num(const bj::object& o, std::string_view key) {
  const bj::value* v = o.if_contains(key);
  return v && v->is_number() ? v->to_number<double>() : 0;
}

}  // namespace

ScenarioResult run_parse(const Options& o) {
  ScenarioResult r{Table("parse",
                         "parse: the parse corpus per turn, /v1/parse end to end vs the Python "
                         "regex reference, same run",
                         {{"parser"},
                          {"turns"},
                          {"exact"},
                          {"exact %", 1},
                          {"wall µs/turn", 1},
                          {"client CPU µs/turn", 1},
                          {"gateway CPU µs/turn", 1}})};
  const std::filesystem::path repo =
      std::filesystem::path(o.bench_python_dir).parent_path().parent_path();
  const std::string corpus = (repo / "tests/parse_corpus/corpus.jsonl").string();
  const std::string tools = (repo / "tests/parse_corpus/tools.json").string();
  GatewayProcess gw;
  const std::string config =
      "gateway:\n  listen: 127.0.0.1:0\nservers:\n  fixture:\n    command: " +
      yaml_string(o.fixture_bin) + "\n";
  if (std::string err = gw.start(o.toolbridge_bin, config, 30s); !err.empty()) {
    r.ok = false;
    r.problems.push_back("the gateway could not start: " + err);
    return r;
  }
  std::cerr << "parse: the corpus through the reference and the endpoint\n";
  const std::string url = fmt::format("http://{}:{}", gw.host(), gw.port());
  const std::string repeat = o.short_mode ? "2" : "10";
  HelperResult res = run_helper({o.python_bin, o.bench_python_dir + "/parse_bench.py", url,
                                 std::to_string(gw.pid()), corpus, tools, "--repeat", repeat},
                                "", 300s);
  report_gateway_end(r, gw);
  boost::system::error_code ec;
  const bj::value v = bj::parse(res.out, ec);
  const bj::object* out = !ec && res.error.empty() ? v.if_object() : nullptr;
  if (!out || !out->contains("endpoint")) {
    r.ok = false;
    r.problems.push_back("the parse driver failed: " + res.error + "\n" + res.stderr_tail);
    return r;
  }
  const double cases = num(*out, "cases");
  const auto& ref = out->at("reference").as_object();
  const auto& rebuilt = out->at("reference_built_per_turn").as_object();
  const auto& ep = out->at("endpoint").as_object();
  const auto pct = [&](double n) { return cases > 0 ? 100.0 * n / cases : 0.0; };
  const auto turns = static_cast<std::int64_t>(cases);
  r.table.add_row({bj::value("Python regex reference, parser built once"), bj::value(turns),
                   bj::value(static_cast<std::int64_t>(num(ref, "exact"))),
                   bj::value(pct(num(ref, "exact"))), bj::value(num(ref, "wall_us")),
                   bj::value(num(ref, "cpu_us")), bj::value(nullptr)});
  r.table.add_row({bj::value("Python regex reference, parser built per turn"), bj::value(turns),
                   bj::value(static_cast<std::int64_t>(num(ref, "exact"))),
                   bj::value(pct(num(ref, "exact"))), bj::value(num(rebuilt, "wall_us")),
                   bj::value(num(rebuilt, "cpu_us")), bj::value(nullptr)});
  const double native = in_process_us(corpus, tools, o.short_mode ? 3 : 20);
  r.table.add_row({bj::value("the gateway's parser in process (C++, no request)"), bj::value(turns),
                   bj::value(static_cast<std::int64_t>(num(ep, "exact"))),
                   bj::value(pct(num(ep, "exact"))), bj::value(native), bj::value(native),
                   bj::value(nullptr)});
  r.table.add_row({bj::value("POST /v1/parse (http.client, keep-alive, one turn per request)"),
                   bj::value(turns), bj::value(static_cast<std::int64_t>(num(ep, "exact"))),
                   bj::value(pct(num(ep, "exact"))), bj::value(num(ep, "wall_us")),
                   bj::value(num(ep, "client_cpu_us")), bj::value(num(ep, "gateway_cpu_us"))});
  const auto& batched = out->at("endpoint_turns").as_object();
  r.table.add_row({bj::value(fmt::format("POST /v1/parse, turns: [...] ({} per request)",
                                         static_cast<int>(num(batched, "turns_per_request")))),
                   bj::value(turns), bj::value(static_cast<std::int64_t>(num(batched, "exact"))),
                   bj::value(pct(num(batched, "exact"))), bj::value(num(batched, "wall_us")),
                   bj::value(num(batched, "client_cpu_us")),
                   bj::value(num(batched, "gateway_cpu_us"))});
  const auto& codec = out->at("client_json_only").as_object();
  r.table.add_row({bj::value("floor: the Python client's json encode + decode alone (no request)"),
                   bj::value(turns), bj::value(nullptr), bj::value(nullptr),
                   bj::value(num(codec, "wall_us")), bj::value(num(codec, "cpu_us")),
                   bj::value(nullptr)});
  std::string kinds;
  for (const auto& [kind, n] : out->at("by_kind").as_object()) {
    const auto& a = n.as_array();
    kinds += fmt::format("{}{} {}/{} vs {}/{}", kinds.empty() ? "" : "; ", std::string_view(kind),
                         a[1].to_number<int>(), a[2].to_number<int>(), a[0].to_number<int>(),
                         a[2].to_number<int>());
  }
  r.table.add_note(
      "exact: the turn's calls (resolved name, arguments) exactly as expected; for the "
      "endpoint also the number of calls reported unparsed. By kind, endpoint vs "
      "reference: " +
      kinds + ".");
  r.table.add_note(
      fmt::format("Each turn {} times; wall and client CPU measured in the Python "
                  "driver, gateway CPU from /proc over the endpoint pass.",
                  repeat));
  r.table.add_note(fmt::format(
      "Reference (parser built once) over each, wall per turn: in process {:.1f}x, one turn "
      "per request {:.2f}x, turns per request {:.2f}x.",
      num(ref, "wall_us") / std::max(native, 1e-9),
      num(ref, "wall_us") / std::max(num(ep, "wall_us"), 1e-9),
      num(ref, "wall_us") / std::max(num(batched, "wall_us"), 1e-9)));
  if (num(ep, "exact") < num(ref, "exact") || num(batched, "exact") < num(ref, "exact")) {
    r.ok = false;
    r.problems.push_back("the endpoint extracted fewer turns exactly than the reference");
  }
  return r;
}

}  // namespace toolbridge::bench
