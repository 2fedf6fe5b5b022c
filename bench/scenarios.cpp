#include "scenarios.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "gateway_process.h"
#include "json/envelope.h"
#include "load.h"
#include "otlp_sink.h"
#include "replay/record_format.h"
#include "scenario_support.h"
#include "spawn_call.h"
#include "stage_cost.h"
#include "stdio_session.h"

namespace toolbridge::bench {

namespace asio = boost::asio;
namespace bj = boost::json;
using namespace std::chrono_literals;

// ---------------------------------------------------------------------------------------------
// overhead: echo through the gateway vs a direct stdio session, closed loop at each concurrency.

namespace {

// A gateway option's cost, paired: two gateways, the second with the option on, run at once
// and measured in alternating short windows, so a change in the machine's load hits both alike.
// The figure is the median over the pairs of (CPU per call with the option) / (without).
struct CostPair {
  std::string what;      // "trace", "record", "replay vs cache hit"
  std::string config_a;  // the gateway without the option (or the baseline)
  std::string config_b;  // the gateway with it
  std::string ratio;     // how the ratio reads, for the note
  std::string note;      // the table note that says what was run
  std::size_t rounds = 12;
  std::chrono::milliseconds window{1000};
  // replay: the cassette's depth per trajectory at each concurrency (none: not a replay pair)
  std::map<std::size_t, std::size_t> calls_per_session;
  std::string bin_a;  // the first gateway's binary, when not the bench's own (--against)
};

// Pairs measured on one start of the two gateways (both started again after that many).
constexpr std::size_t kPairsPerStart = 2;

void run_cost_pairs(const Options& o, ScenarioResult& r, const std::vector<std::size_t>& levels,
                    std::size_t warmup, const CostPair& pair) {
  // Every two pairs both are stopped and started again the other way round, so that neither
  // gains from its place (started first or second) or from one process's luck (where its code and
  // heap fell in the caches): the same gateway against itself came out up to 9 % apart in one
  // pair of processes, and two processes of one binary in turn differed by 10 % (bench/README.md).
  std::unique_ptr<GatewayProcess> plain, with;
  bool with_first = false;
  auto start_both = [&]() -> bool {
    plain = std::make_unique<GatewayProcess>();
    with = std::make_unique<GatewayProcess>();
    std::array order{std::pair{plain.get(), &pair.config_a}, std::pair{with.get(), &pair.config_b}};
    if (with_first) std::swap(order[0], order[1]);
    std::cerr << "overhead: starting two gateways (" << pair.what
              << (with_first ? ", the second first" : "") << ")\n";
    for (auto [gw, config] : order) {
      const std::string& bin =
          gw == plain.get() && !pair.bin_a.empty() ? pair.bin_a : o.toolbridge_bin;
      const std::string err = gw->start(bin, *config, 60s);
      if (!err.empty()) {
        r.ok = false;
        r.problems.push_back(
            fmt::format("gateway for the {} pairs could not start: {}", pair.what, err));
        return false;
      }
    }
    return true;
  };
  auto stop_both = [&] {
    report_gateway_end(r, *plain);
    report_gateway_end(r, *with);
  };
  if (!start_both()) return;
  const std::size_t rounds = o.short_mode ? 2 : o.cost_pairs > 0 ? o.cost_pairs : pair.rounds;
  const std::chrono::milliseconds win(o.short_mode ? std::min(pair.window, std::chrono::milliseconds(500))
                                                   : pair.window);
  // Gateway CPU per call over one window of `c` workers, or nullopt if it could not be read.
  auto cpu_per_call = [&](GatewayProcess& gw, std::size_t c) -> std::optional<double> {
    const pid_t fixture = server_pid(gw, "fixture");
    asio::io_context io(1);
    HttpSessionTarget target(io, gw.host(), gw.port(), {"fixture__echo", R"({"text":"hello"})", 5}, c);
    PathSample before, after;
    // A replay pair's window ends before its sessions can outrun the cassette (a quarter spare
    // for sessions that go faster than the others).
    std::uint64_t max_calls = 0;
    if (auto depth = pair.calls_per_session.find(c); depth != pair.calls_per_session.end())
      max_calls = (depth->second - std::min(depth->second, warmup)) * c * 3 / 4;
    LoadResult res = run_until_done(io, run_closed_loop(
                                            target, {c, warmup, win, max_calls, o.rate},
                                            [&] { before = sample_path(&gw, fixture); },
                                            [&] { after = sample_path(&gw, fixture); }));
    report_errors(r, fmt::format("{} pairs c={}", pair.what, c), res);
    if (auto depth = pair.calls_per_session.find(c);
        depth != pair.calls_per_session.end() && res.calls + warmup * c > depth->second * c) {
      r.problems.push_back(fmt::format("{} pairs c={}: {} calls in a window, more than the cassette's {} per "
                                       "session: some were misses",
                                       pair.what, c, res.calls, depth->second));
    }
    if (!before.gateway || !after.gateway || !before.gateway->ok || !after.gateway->ok || res.calls == 0)
      return std::nullopt;
    return (after.gateway->cpu_us - before.gateway->cpu_us) / static_cast<double>(res.calls);
  };
  for (std::size_t c : levels) {
    std::vector<double> ratios, with_us, without_us;
    for (std::size_t k = 0; k < rounds; ++k) {
      if (rounds >= 4 && k > 0 && k % kPairsPerStart == 0) {
        stop_both();
        with_first = !with_first;
        if (!start_both()) return;
      }
      // Which gateway goes first alternates (ABBA), so neither always runs on the state the
      // other left (caches, a writer thread finishing its last batch).
      std::optional<double> a, b;
      if (k % 2 == 0) {
        a = cpu_per_call(*plain, c);
        b = cpu_per_call(*with, c);
      } else {
        b = cpu_per_call(*with, c);
        a = cpu_per_call(*plain, c);
      }
      if (a && b && *a > 0) {
        ratios.push_back(*b / *a);
        without_us.push_back(*a);
        with_us.push_back(*b);
      }
    }
    if (ratios.empty()) continue;
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      const std::size_t m = v.size() / 2;
      return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
    };
    const double mid = median(ratios);
    std::sort(ratios.begin(), ratios.end());
    const std::string line = fmt::format(
        "{} cost at c={}{}: gateway CPU per call {}, median of {} alternating {:.1f}-s "
        "window pairs: {:.3f} ({:+.1f} %; pairs from {:.3f} to {:.3f}); median µs/call {:.1f} "
        "without, "
        "{:.1f} with",
        pair.what, c, o.rate > 0 ? fmt::format(" at {:g} calls/s", o.rate) : std::string(),
        pair.ratio, ratios.size(), static_cast<double>(win.count()) / 1000, mid, (mid - 1) * 100,
        ratios.front(), ratios.back(), median(without_us), median(with_us));
    std::cerr << "  " << line << "\n";
    r.table.add_note(line);
  }
  stop_both();
  r.table.add_note(pair.note + (rounds >= 4
                                    ? fmt::format(" Both were started again the other way round "
                                                  "after every {} pairs.",
                                                  kPairsPerStart)
                                    : std::string()));
}

void run_trace_pairs(const Options& o, ScenarioResult& r, const std::vector<std::size_t>& levels,
                     std::size_t warmup) {
  const std::string trace_file = fmt::format("/tmp/toolbridge-bench-trace-{}.jsonl", ::getpid());
  run_cost_pairs(o, r, levels, warmup,
                 {"trace", gateway_config(o, false, false), gateway_config(o, false, false, trace_file),
                  "with the trace / without",
                  "trace pairs: two gateways at once, the second with gateway.trace on (one JSON line per call "
                  "to a file on local disk, rotated at 64 MiB), measured in turn."});
  std::error_code ec;
  for (const char* suffix : {"", ".1", ".2", ".3", ".4"}) std::filesystem::remove(trace_file + suffix, ec);
}

// Span export's cost: the second gateway exports every call's spans (sample_ratio 1) over
// OTLP/HTTP protobuf to a local sink that answers at once.
void run_otel_pairs(const Options& o, ScenarioResult& r, const std::vector<std::size_t>& levels,
                    std::size_t warmup) {
  OtlpSink sink;
  std::string config = gateway_config(o, false, false, "");
  const std::string otel =
      "  otel: {endpoint: \"" + sink.endpoint() + "\", sample_ratio: 1, protocol: http/protobuf}\n";
  config.insert(config.find("gateway:\n") + 9, otel);
  run_cost_pairs(o, r, levels, warmup,
                 {"otel", gateway_config(o, false, false), config, "with span export / without",
                  "otel pairs: two gateways at once, the second exporting every call's spans (2 or 3 a call: "
                  "the call, its execution, its queue when it waited 1 ms or more; sample_ratio 1, "
                  "http/protobuf, batch_size 512) to a local OTLP "
                  "sink that reads each request whole and answers 200, measured in turn."});
  r.table.add_note(fmt::format("otel sink: {} export requests, {:.1f} MiB of OTLP protobuf received.",
                               sink.requests(), static_cast<double>(sink.bytes()) / (1 << 20)));
}

// Another build of the gateway against this one, same configuration: "is this commit slower?"
// (the build to compare with is built from its own checkout; see bench/README.md).
void run_against_pairs(const Options& o, ScenarioResult& r, const std::vector<std::size_t>& levels,
                       std::size_t warmup) {
  CostPair pair{"this build vs --against", gateway_config(o, false, false),
                gateway_config(o, false, false), "of this build / of " + o.against,
                "against pairs: two gateways at once with the same configuration, the first from " +
                    o.against + ", the second from " + o.toolbridge_bin + ", measured in turn."};
  pair.bin_a = o.against;
  run_cost_pairs(o, r, levels, warmup, pair);
}

// gateway_config(o) with `lines` added to its gateway section.
std::string with_gateway_lines(const Options& o, const std::string& lines) {
  std::string y = gateway_config(o, false, false);
  const std::string head = "gateway:\n";
  y.insert(y.find(head) + head.size(), lines);
  return y;
}

// A cassette for the replay pairs: for each (trajectories, calls) group in turn, that many
// trajectories of `calls` fixture__echo calls each ({"text":"hello"}, occurrences 1..calls), the
// fixture's server record first.
void write_bench_cassette(const std::string& dir,
                          const std::vector<std::pair<std::size_t, std::size_t>>& groups) {
  std::filesystem::create_directories(dir);
  std::ofstream out(dir + "/calls.jsonl", std::ios::binary);
  out << replay::sealed_line(R"({"kind":"run","format":1,"run":"bench")");
  out << replay::sealed_line(
      R"({"kind":"server","server":"fixture","name":"toolbridge-fixture","version":"bench",)"
      R"("tools_hash":"0","tools":[{"name":"echo","inputSchema":{"type":"object","properties":)"
      R"({"text":{"type":"string"}},"required":["text"]}}])");
  std::uint64_t seq = 0;
  std::size_t t = 0;
  for (const auto& [trajectories, calls] : groups) {
    for (const std::size_t last = t + trajectories; t < last; ++t) {
      for (std::size_t k = 1; k <= calls; ++k) {
        out << replay::sealed_line(fmt::format(
            R"({{"kind":"call","seq":{},"trajectory":"t{}","server":"fixture","tool":"echo",)"
            R"("arguments":{{"text":"hello"}},"occurrence":{},"duration_ms":0.1,"fingerprint":"0",)"
            R"("result":{{"content":[{{"type":"text","text":"hello"}}]}})",
            seq++, t, k));
      }
    }
  }
}

// Recording's cost against none, and a replayed call's against a cache hit, at each level.
void run_record_pairs(const Options& o, ScenarioResult& r, const std::vector<std::size_t>& levels,
                      std::size_t warmup) {
  const std::string root = fmt::format("/tmp/toolbridge-bench-record-{}", ::getpid());
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  run_cost_pairs(
      o, r, levels, warmup,
      {"record", gateway_config(o, false, false),
       with_gateway_lines(
           o, "  record: {path: " + yaml_string(root + "/runs") + ", max_bytes: 64GiB}\n"),
       "recording / not",
       "record pairs: two gateways at once, the second with gateway.record on (one JSON line per "
       "call to a cassette on local disk, written every 100 ms), measured in turn."});
  // Replay against the cache: every worker's session is a new trajectory, paired with the
  // cassette's next one (the order of first use); a cassette deep enough for every window.
  // As many trajectories as the windows will open sessions (run_cost_pairs' count of pairs):
  // a session beyond them would find no trajectory of its own and every call would miss. Each
  // level's are as deep as one of its sessions may go in a window (0.5 s), twice what the rate
  // gives it (closed loop: 60,000 calls/s in all, more than a replaying gateway answers here; a
  // window also ends at three quarters of the depth), and no deeper: a cassette sized for the
  // fastest level at every level held millions of records (GiBs) that no call read.
  const std::size_t rounds = o.short_mode ? 2 : o.cost_pairs > 0 ? o.cost_pairs : 6;
  std::vector<std::pair<std::size_t, std::size_t>> groups;
  std::map<std::size_t, std::size_t> depth;
  std::size_t sessions = 0, records = 0;
  for (std::size_t c : levels) {
    const double per_window = (o.rate > 0 ? 2 * o.rate : 60000.0) * 0.5 / static_cast<double>(c);
    depth[c] = std::min<std::size_t>(2000, static_cast<std::size_t>(per_window) + warmup + 16);
    groups.emplace_back(c * rounds + c, depth[c]);  // + the warm-up target's
    sessions += c * rounds + c;
    records += (c * rounds + c) * depth[c];
  }
  write_bench_cassette(root + "/replay/bench", groups);
  run_cost_pairs(o, r, levels, warmup,
                 {"replay vs cache hit",
                  [&] {
                    std::string y = gateway_config(o, false, false);
                    y += "    cache: {tools: [echo], ttl: 1h}\n";
                    return y;
                  }(),
                  with_gateway_lines(o, "  replay: {path: " + yaml_string(root + "/replay/bench") +
                                            ", mode: strict}\n"),
                  "replayed / cache hit",
                  fmt::format("replay pairs: a gateway answering fixture__echo from its result cache (memory tier) "
                              "against one answering it from a cassette in strict mode (no server; {} trajectories, "
                              "{} records), measured in turn.",
                              sessions, records),
                  rounds, std::chrono::milliseconds(500), depth});
  std::filesystem::remove_all(root, ec);
}

// The record and replay stages' own cost, in this process (stage_cost.h), against the gateway
// row's CPU per call of this run: what recording adds to a whole call, and a replayed call's
// stages against a cache hit's.
void add_stage_cost_notes(const Options& o, ScenarioResult& r,
                          const std::map<std::size_t, double>& gateway_cpu_us) {
  const std::size_t rounds = o.short_mode ? 20 : 400;
  for (const bool distinct : {false, true}) {
    std::cerr << "overhead: the record and replay stages in process (" << rounds << " rounds)\n";
    const StageCosts s = measure_stage_costs(
        64, 32, rounds, distinct, fmt::format("/tmp/toolbridge-bench-stages-{}", ::getpid()));
    if (!s.error.empty()) {
      r.ok = false;
      r.problems.push_back("stage costs: " + s.error);
      return;
    }
    std::string shares;
    for (const auto& [c, us] : gateway_cpu_us) {
      if (us <= 0) continue;
      shares += fmt::format("{}{:+.1f} % of the gateway row's {:.1f} µs/call at c={}",
                            shares.empty() ? "" : ", ", 100 * s.record_extra_us / us, us, c);
    }
    const std::string line = fmt::format(
        "stage costs in process, {} (64 workers on one thread, {} calls a round, medians of {} "
        "rounds, the chains "
        "in turn; CPU of the whole process, its lines sealed and "
        "written 200 at a time as its 100-ms interval takes them at 2,000 calls/s): a call "
        "answered by the last "
        "stage alone {:.2f} µs; recording adds {:.2f} µs (quartiles {:.2f} to {:.2f}){}{}; a "
        "replayed call's "
        "stages cost {:.2f} µs, a cache hit's (idempotency and cache) {:.2f} µs: replayed − cache "
        "hit {:+.2f} µs "
        "(quartiles {:+.2f} to {:+.2f}; cassette of {} records).",
        distinct ? "every call's arguments its own"
                 : "every call {\"text\":\"hello\"} (one cache entry)",
        s.calls_per_round, s.rounds, s.answer_us, s.record_extra_us, s.record_extra_lo,
        s.record_extra_hi, shares.empty() ? "" : ", that is ", shares, s.replay_extra_us,
        s.cache_hit_extra_us, s.replay_minus_hit_us, s.replay_minus_hit_lo, s.replay_minus_hit_hi,
        s.records);
    std::cerr << "  " << line << "\n";
    r.table.add_note(line);
  }
}

}  // namespace

ScenarioResult run_overhead(const Options& o) {
  const std::string title = o.rate > 0 ? fmt::format("overhead: fixture echo through the gateway vs a direct stdio "
                                                     "session, fixed rate {:g} calls/s (open loop)", o.rate)
                                       : std::string("overhead: fixture echo through the gateway vs a direct stdio session");
  ScenarioResult r{Table("overhead", title,
                         {{"mode"},
                          {"conc"},
                          {"calls"},
                          {"calls/s", 0},
                          {"p50 µs", 0},
                          {"p90 µs", 0},
                          {"p99 µs", 0},
                          {"max µs", 0},
                          {"p50/floor", 2},
                          {"p50/floor 1CPU", 1},
                          {"errors"},
                          {"gw CPU µs/call", 1},
                          {"server CPU µs/call", 1},
                          {"bench CPU µs/call", 1},
                          {"gw RSS MiB", 1}})};
  std::vector<std::size_t> levels = o.concurrency;
  if (levels.empty()) levels = o.short_mode ? std::vector<std::size_t>{1, 8, 64} : std::vector<std::size_t>{1, 8, 64, 256, 1024, 4096};
  const auto win = window(o, 1.0, 5.0);
  const std::size_t warmup = o.short_mode ? 3 : 10;
  const double gw_floor = o.floor.tcp_rtt_us + o.floor.pipe_rtt_us;
  const double direct_floor = o.floor.pipe_rtt_us;
  const double gw_floor_1cpu = o.floor.tcp_same_cpu_us + o.floor.pipe_same_cpu_us;
  const double direct_floor_1cpu = o.floor.pipe_same_cpu_us;

  std::map<std::size_t, double> gateway_cpu_us;  // the gateway row's CPU per call, by level
  auto add_row = [&](const char* mode, std::size_t c, const LoadResult& res, double floor_us, double floor_1cpu_us,
                     const PathSample& before, const PathSample& after) {
    const auto& [gw0, s0, b0] = before;
    const auto& [gw1, s1, b1] = after;
    const double calls = static_cast<double>(res.calls);
    const double ok_calls = static_cast<double>(res.latency.count());
    const bool gw = gw0 && gw1 && gw0->ok && gw1->ok && calls > 0;
    if (gw && std::string_view(mode) == "gateway")
      gateway_cpu_us[c] = (gw1->cpu_us - gw0->cpu_us) / calls;
    const bool server = s0.ok && s1.ok && calls > 0;
    const double p50 = res.latency.percentile(50);
    r.table.add_row({bj::value(mode), bj::value(static_cast<std::int64_t>(c)), bj::value(static_cast<std::int64_t>(res.calls)),
                     bj::value(res.seconds > 0 ? ok_calls / res.seconds : 0.0), bj::value(p50),
                     bj::value(res.latency.percentile(90)), bj::value(res.latency.percentile(99)),
                     bj::value(res.latency.max()), bj::value(floor_us > 0 ? p50 / floor_us : 0.0),
                     bj::value(floor_1cpu_us > 0 ? p50 / floor_1cpu_us : 0.0),
                     bj::value(static_cast<std::int64_t>(res.errors)),
                     number_or_null(gw ? (gw1->cpu_us - gw0->cpu_us) / calls : 0, gw),
                     number_or_null(server ? (s1.cpu_us - s0.cpu_us) / calls : 0, server),
                     number_or_null(b0.ok && b1.ok && calls > 0 ? (b1.cpu_us - b0.cpu_us) / calls : 0,
                                    b0.ok && b1.ok && calls > 0),
                     number_or_null(gw ? gw1->rss_mib : 0, gw)});
    std::cerr << fmt::format("  {} c={}: {} calls in {:.2f} s, p50 {:.0f} µs, {} errors\n", mode, c, res.calls,
                             res.seconds, p50, res.errors);
  };

  // Through the gateway: one MCP session and keep-alive connection per worker; with --trace,
  // again with the call trace on, writing to a file that is removed afterwards.
  auto through_gateway = [&](const char* mode, const std::string& trace_file) {
    GatewayProcess gw;
    std::cerr << "overhead: starting the gateway (" << mode << ")\n";
    const std::string err =
        gw.start(o.toolbridge_bin, gateway_config(o, false, false, trace_file), 30s);
    if (!err.empty()) {
      r.ok = false;
      r.problems.push_back(fmt::format("gateway ({}) could not start: {}", mode, err));
      return;
    }
    const pid_t fixture = server_pid(gw, "fixture");
    for (std::size_t c : levels) {
      if (std::string dead = gw.exited(); !dead.empty()) {
        r.ok = false;
        r.problems.push_back(dead);
        break;
      }
      asio::io_context io(1);
      HttpSessionTarget target(io, gw.host(), gw.port(), {"fixture__echo", R"({"text":"hello"})", 5}, c);
      PathSample before, after;
      LoadResult res = run_until_done(
          io, run_closed_loop(
                  target, {c, warmup, win, 0, o.rate}, [&] { before = sample_path(&gw, fixture); },
                  [&] { after = sample_path(&gw, fixture); }));
      add_row(mode, c, res, gw_floor, gw_floor_1cpu, before, after);
      report_errors(r, fmt::format("{} c={}", mode, c), res);
      if (target.reconnects() > 0) {
        r.problems.push_back(fmt::format("{} c={}: the gateway closed {} keep-alive connection(s)", mode, c,
                                         target.reconnects()));
      }
    }
    report_gateway_end(r, gw);
  };
  through_gateway("gateway", "");
  if (o.trace) run_trace_pairs(o, r, levels, warmup);
  if (o.otel) run_otel_pairs(o, r, levels, warmup);
  if (o.record) {
    run_record_pairs(o, r, levels, warmup);
    add_stage_cost_notes(o, r, gateway_cpu_us);
  }
  if (!o.against.empty()) run_against_pairs(o, r, levels, warmup);

  // Direct: one stdio session to the same fixture binary, `c` requests in flight on its pipe.
  {
    asio::io_context io(1);
    StdioSession session(io, 60s);
    std::cerr << "overhead: direct stdio session\n";
    std::string err = session.spawn({o.fixture_bin});
    if (err.empty()) err = run_until_done(io, session.open());
    if (!err.empty()) {
      r.ok = false;
      r.problems.push_back("direct session could not start: " + err);
    } else {
      for (std::size_t c : levels) {
        StdioTarget target(session, {"echo", R"({"text":"hello"})", 5});
        PathSample before, after;
        LoadResult res = run_until_done(
            io, run_closed_loop(
                    target, {c, warmup, win, 0, o.rate}, [&] { before = sample_path(nullptr, session.pid()); },
                    [&] { after = sample_path(nullptr, session.pid()); }));
        add_row("direct", c, res, direct_floor, direct_floor_1cpu, before, after);
        report_errors(r, fmt::format("direct c={}", c), res);
      }
    }
    const std::string how = run_until_done(io, session.shutdown(5s));
    drain(io);
    if (err.empty() && how != "exited with code 0") r.problems.push_back("direct fixture: " + how);
  }
  r.table.add_note(fmt::format("p50/floor: gateway rows against TCP + pipe round trip across CPUs ({:.1f} µs), "
                               "direct rows against one pipe round trip across CPUs ({:.1f} µs); p50/floor 1CPU: "
                               "the same with both ends on one CPU ({:.1f} µs, {:.1f} µs).",
                               gw_floor, direct_floor, gw_floor_1cpu, direct_floor_1cpu));
  if (o.rate > 0) {
    r.table.add_note(fmt::format("Open loop: call k is due at {:g}·k µs into the window and goes to the next free "
                                 "worker; latency counts from when it was due, so queueing behind a slow call is "
                                 "included (no coordinated omission). calls/s below the rate means it was not kept.",
                                 1e6 / o.rate));
  }
  r.table.add_note(fmt::format("{} s measured per row after {} warm-up calls per worker; one MCP session and "
                               "keep-alive connection per worker; CPU from /proc/PID/stat (10 ms ticks).",
                               std::chrono::duration<double>(win).count(), warmup));
  return r;
}

// ---------------------------------------------------------------------------------------------
// payload: large tool results through the gateway.

ScenarioResult run_payload(const Options& o) {
  ScenarioResult r{Table("payload", "payload: fixture payload results through the gateway, concurrency 4",
                         {{"size"},
                          {"calls"},
                          {"calls/s", 1},
                          {"MB/s", 1},
                          {"p50 ms", 2},
                          {"p99 ms", 2},
                          {"errors"},
                          {"gw CPU µs/call", 0},
                          {"gw CPU µs/MB", 0},
                          {"server CPU µs/MB", 0},
                          {"bench CPU µs/MB", 0},
                          {"gw RSS MiB", 1}})};
  struct Size {
    const char* label;
    std::size_t bytes;
  };
  std::vector<Size> sizes{{"1 KB", 1'000}, {"100 KB", 100'000}, {"1 MB", 1'000'000}};
  if (!o.short_mode) sizes.push_back({"10 MB", 10'000'000});
  const auto win = window(o, 1.5, 5.0);
  constexpr std::size_t kConcurrency = 4;

  GatewayProcess gw;
  std::cerr << "payload: starting the gateway\n";
  const std::string err = gw.start(o.toolbridge_bin, gateway_config(o, false), 30s);
  if (!err.empty()) {
    r.ok = false;
    r.problems.push_back("gateway could not start: " + err);
    return r;
  }
  const pid_t fixture = server_pid(gw, "fixture");
  for (const auto& size : sizes) {
    if (std::string dead = gw.exited(); !dead.empty()) {
      r.ok = false;
      r.problems.push_back(dead);
      break;
    }
    asio::io_context io(1);
    HttpSessionTarget target(io, gw.host(), gw.port(),
                             {"fixture__payload", fmt::format(R"({{"bytes":{}}})", size.bytes), size.bytes},
                             kConcurrency);
    PathSample before, after;
    LoadResult res = run_until_done(
        io, run_closed_loop(
                target, {kConcurrency, 2, win, 0}, [&] { before = sample_path(&gw, fixture); },
                [&] { after = sample_path(&gw, fixture); }));
    const ProcSample &g0 = *before.gateway, &g1 = *after.gateway;
    const ProcSample &s0 = before.server, &s1 = after.server, &b0 = before.bench, &b1 = after.bench;
    const double calls = static_cast<double>(res.calls);
    const double ok_calls = static_cast<double>(res.latency.count());
    const bool cpu = g0.ok && g1.ok && calls > 0;
    const double cpu_us = g1.cpu_us - g0.cpu_us;
    const double mb = calls * static_cast<double>(size.bytes) / 1e6;
    r.table.add_row({bj::value(size.label), bj::value(static_cast<std::int64_t>(res.calls)),
                     bj::value(res.seconds > 0 ? ok_calls / res.seconds : 0.0),
                     bj::value(res.seconds > 0 ? ok_calls * static_cast<double>(size.bytes) / 1e6 / res.seconds : 0.0),
                     bj::value(res.latency.percentile(50) / 1000), bj::value(res.latency.percentile(99) / 1000),
                     bj::value(static_cast<std::int64_t>(res.errors)), number_or_null(cpu ? cpu_us / calls : 0, cpu),
                     number_or_null(cpu && mb > 0 ? cpu_us / mb : 0, cpu),
                     number_or_null(mb > 0 ? (s1.cpu_us - s0.cpu_us) / mb : 0, s0.ok && s1.ok && mb > 0),
                     number_or_null(mb > 0 ? (b1.cpu_us - b0.cpu_us) / mb : 0, b0.ok && b1.ok && mb > 0),
                     number_or_null(g1.rss_mib, g1.ok)});
    std::cerr << fmt::format("  {}: {} calls in {:.2f} s, {} errors\n", size.label, res.calls, res.seconds, res.errors);
    report_errors(r, std::string("payload ") + size.label, res);
  }
  report_gateway_end(r, gw);
  r.table.add_note(fmt::format("{} s measured per row; 1 MB = 10^6 bytes of result text; server = the fixture "
                               "behind the gateway, bench = this load generator (same CPUs); gw RSS at the end of "
                               "the row.",
                               std::chrono::duration<double>(win).count()));
  return r;
}

// ---------------------------------------------------------------------------------------------
// spawn-per-call: spawn + initialize + call + exit per call, vs the same call through the gateway.

ScenarioResult run_spawn_per_call(const Options& o) {
  ScenarioResult r{Table("spawn-per-call", "spawn-per-call: a new server process per call vs the gateway",
                         {{"server"},
                          {"mode"},
                          {"calls"},
                          {"mean ms", 2},
                          {"p50 ms", 2},
                          {"p99 ms", 2},
                          {"errors"},
                          {"spawn/this", 1}})};
  struct Server {
    std::string name;
    std::vector<std::string> argv;
    std::string tool;
    std::string arguments;
    int spawns;
  };
  std::vector<Server> servers{{"fixture", {o.fixture_bin}, "echo", R"({"text":"hello"})", o.short_mode ? 5 : 50}};
  const bool fastmcp = ::access(o.python_bin.c_str(), X_OK) == 0 &&
                       std::filesystem::exists(o.bench_python_dir + "/fastmcp_server.py");
  if (fastmcp) {
    servers.push_back({"fastmcp", fastmcp_argv(o), "echo", R"({"text":"hello"})", o.short_mode ? 3 : 20});
  } else {
    r.ok = false;
    r.problems.push_back("no Python at '" + o.python_bin + "' or no fastmcp_server.py in '" + o.bench_python_dir +
                         "' (--python); the FastMCP rows are missing");
  }
  const bool everything = !o.everything_js.empty() && std::filesystem::exists(o.everything_js);
  if (everything) {
    servers.push_back({"everything", {o.node_bin, o.everything_js, "stdio"}, "echo", R"({"message":"hello"})",
                       o.short_mode ? 3 : 20});
  } else {
    r.ok = false;
    r.problems.push_back("server-everything not found at '" + o.everything_js + "' (--everything); its rows are missing");
  }
  const std::uint64_t per_call_sessions = o.short_mode ? 20 : 300;
  const std::uint64_t warm_calls = o.short_mode ? 100 : 2000;

  auto add_row = [&](const Server& s, const char* mode, const Latencies& lat, std::uint64_t calls,
                     std::uint64_t errors, double spawn_mean_ms) {
    const double mean = lat.mean() / 1000;
    r.table.add_row({bj::value(s.name), bj::value(mode), bj::value(static_cast<std::int64_t>(calls)), bj::value(mean),
                     bj::value(lat.percentile(50) / 1000), bj::value(lat.percentile(99) / 1000),
                     bj::value(static_cast<std::int64_t>(errors)),
                     number_or_null(mean > 0 ? spawn_mean_ms / mean : 0, mean > 0 && spawn_mean_ms > 0)});
  };

  // Spawn per call first, while nothing else runs.
  std::vector<double> spawn_mean(servers.size(), 0);
  std::vector<Latencies> spawn_lat(servers.size());
  std::vector<std::uint64_t> spawn_errors(servers.size(), 0);
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const auto& s = servers[i];
    std::cerr << fmt::format("spawn-per-call: {} x {} spawns\n", s.name, s.spawns);
    // One unmeasured spawn first, so the file cache is warm for every measured one.
    SpawnCallResult warm = spawn_per_call(s.argv, s.tool, s.arguments, 30s, 5s);
    if (!warm.error.empty()) {
      r.ok = false;
      r.problems.push_back(s.name + " spawn-per-call: " + warm.error);
    }
    for (int k = 0; k < s.spawns; ++k) {
      SpawnCallResult one = spawn_per_call(s.argv, s.tool, s.arguments, 30s, 5s);
      if (one.error.empty()) {
        spawn_lat[i].add(one.ms * 1000);
      } else {
        ++spawn_errors[i];
        r.ok = false;
        r.problems.push_back(s.name + " spawn-per-call: " + one.error);
      }
    }
    spawn_mean[i] = spawn_lat[i].mean() / 1000;
  }

  GatewayProcess gw;
  std::cerr << "spawn-per-call: starting the gateway\n";
  const std::string err = gw.start(o.toolbridge_bin, gateway_config(o, everything, fastmcp), 60s);
  if (!err.empty()) {
    r.ok = false;
    r.problems.push_back("gateway could not start: " + err);
  }
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const auto& s = servers[i];
    add_row(s, "spawn per call", spawn_lat[i], static_cast<std::uint64_t>(s.spawns), spawn_errors[i], spawn_mean[i]);
    if (!err.empty()) continue;
    const ToolCall call{s.name + "__" + s.tool, s.arguments, 0};
    {
      asio::io_context io(1);
      HttpSessionPerCallTarget target(io, gw.host(), gw.port(), call);
      LoadResult res = run_until_done(io, run_closed_loop(target, {1, 2, 600s, per_call_sessions}, {}, {}));
      add_row(s, "gateway, new session per call", res.latency, res.calls, res.errors, spawn_mean[i]);
      report_errors(r, s.name + " gateway, new session per call", res);
    }
    {
      asio::io_context io(1);
      HttpSessionTarget target(io, gw.host(), gw.port(), call, 1);
      LoadResult res = run_until_done(io, run_closed_loop(target, {1, 5, 600s, warm_calls}, {}, {}));
      add_row(s, "gateway, warm session", res.latency, res.calls, res.errors, spawn_mean[i]);
      report_errors(r, s.name + " gateway, warm session", res);
    }
  }
  if (err.empty()) report_gateway_end(r, gw);
  r.table.add_note(
      "spawn per call: spawn, initialize, notifications/initialized, tools/call, close stdin, wait for the exit "
      "(sequential, one unmeasured spawn first). fastmcp: bench/python/fastmcp_server.py, the official Python "
      "SDK's FastMCP (named MCPServer in mcp 2.x). gateway: the same tools/call through a warm gateway, either "
      "opening a new MCP session (TCP connect, initialize, call, DELETE) per call or on one kept session. "
      "spawn/this: spawn-per-call mean divided by the row's mean.");
  return r;
}

}  // namespace toolbridge::bench

namespace toolbridge::bench {

ScenarioResult run_startup(const Options& o) {
  // K servers that each take T to answer initialize: started one after another (what frameworks
  // did) against the gateway's parallel start, uncapped and with a start cap.
  const std::size_t k = o.short_mode ? 4 : 8;
  const int init_ms = o.short_mode ? 200 : 500;
  const std::size_t cap = 2;
  ScenarioResult r{Table("startup",
                         fmt::format("startup: {} servers that each take {} ms to initialize", k, init_ms),
                         {{"mode"}, {"servers"}, {"start_concurrency"}, {"ms until all ready", 0}, {"one-by-one/this", 1}})};
  const std::vector<std::string> argv{o.fixture_bin, "--init-delay-ms", std::to_string(init_ms)};

  std::cerr << fmt::format("startup: {} servers one by one\n", k);
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < k; ++i) {
    SpawnCallResult one = spawn_per_call(argv, "echo", R"({"text":"ready"})", 30s, 5s);
    if (!one.error.empty()) {
      r.ok = false;
      r.problems.push_back("one-by-one start: " + one.error);
    }
  }
  const double sequential_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  r.table.add_row({bj::value("one by one (spawn + initialize each)"), bj::value(static_cast<std::int64_t>(k)),
                   bj::value("-"), bj::value(sequential_ms), bj::value(1.0)});

  for (std::size_t concurrency : {k, cap}) {
    std::string config = fmt::format("gateway:\n  start_concurrency: {}\nservers:\n", concurrency);
    for (std::size_t i = 0; i < k; ++i) {
      config += fmt::format("  s{}:\n    command: {}\n    args: [--init-delay-ms, \"{}\"]\n", i,
                            o.fixture_bin, init_ms);
    }
    std::cerr << fmt::format("startup: gateway, start_concurrency {}\n", concurrency);
    GatewayProcess gw;
    const auto started = std::chrono::steady_clock::now();
    const std::string err = gw.start(o.toolbridge_bin, config, 60s);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    if (!err.empty()) {
      r.ok = false;
      r.problems.push_back("gateway start: " + err);
      continue;
    }
    gw.stop();
    r.table.add_row({bj::value("toolbridge serve until /healthz ok"), bj::value(static_cast<std::int64_t>(k)),
                     bj::value(static_cast<std::int64_t>(concurrency)), bj::value(ms),
                     bj::value(ms > 0 ? sequential_ms / ms : 0.0)});
  }
  r.table.add_note("one by one: each server spawned, initialized, called once and exited in turn; toolbridge: "
                   "from starting the gateway process until /healthz reports every server ready "
                   "(polled, so a few ms are noise).");
  return r;
}

}  // namespace toolbridge::bench
