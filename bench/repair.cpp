// repair: what call repair and validation cost the gateway per call. The fixture's echo at one
// concurrency through gateways that differ only in the fixture's repair/validate keys, run one
// after another and repeated (variants interleaved, so drift on a noisy machine shows).
#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/json/value.hpp>
#include <iostream>

#include "gateway_process.h"
#include "load.h"
#include "scenario_support.h"
#include "scenarios.h"

namespace toolbridge::bench {

namespace asio = boost::asio;
namespace bj = boost::json;
using namespace std::chrono_literals;

namespace {

struct Variant {
  const char* name;
  const char* keys;       // YAML lines under the fixture server
  const char* tool;       // exposed name
  const char* arguments;  // raw JSON
};

constexpr Variant kVariants[] = {
    {"repair off, validate off", "    repair: \"off\"\n    validate: \"off\"\n", "fixture__echo",
     R"({"text":"hello"})"},
    {"safe, warn (default), valid call", "", "fixture__echo", R"({"text":"hello"})"},
    {"safe, enforce, valid call", "    validate: enforce\n", "fixture__echo",
     R"({"text":"hello"})"},
    {"safe, warn, call repaired", "", "fixture__search", R"({"Query":"x","limit":"5"})"},
};

}  // namespace

ScenarioResult run_repair(const Options& o) {
  ScenarioResult r{Table("repair",
                         "repair and validation: gateway CPU per call, echo at one concurrency, "
                         "variants interleaved",
                         {{"variant"},
                          {"round"},
                          {"conc"},
                          {"calls"},
                          {"calls/s", 0},
                          {"p50 µs", 0},
                          {"errors"},
                          {"gw CPU µs/call", 1}})};
  const std::size_t c = o.concurrency.empty() ? 64 : o.concurrency.front();
  const auto win = window(o, 1.0, 5.0);
  const std::size_t rounds = o.short_mode ? 1 : 3;
  for (std::size_t round = 1; round <= rounds; ++round) {
    for (const Variant& v : kVariants) {
      GatewayProcess gw;
      std::cerr << fmt::format("repair: round {}, {}\n", round, v.name);
      const std::string config =
          "gateway:\n  listen: 127.0.0.1:0\nservers:\n  fixture:\n    command: " +
          yaml_string(o.fixture_bin) + "\n" + v.keys;
      const std::string err = gw.start(o.toolbridge_bin, config, 30s);
      if (!err.empty()) {
        r.ok = false;
        r.problems.push_back(fmt::format("{}: the gateway could not start: {}", v.name, err));
        continue;
      }
      const pid_t fixture = server_pid(gw, "fixture");
      asio::io_context io(1);
      HttpSessionTarget target(io, gw.host(), gw.port(), {v.tool, v.arguments, 5}, c);
      PathSample before, after;
      LoadResult res = run_until_done(io, run_closed_loop(
                                              target, {c, o.short_mode ? 3u : 10u, win, 0, 0},
                                              [&] { before = sample_path(&gw, fixture); },
                                              [&] { after = sample_path(&gw, fixture); }));
      const bool cpu = before.gateway && after.gateway && before.gateway->ok && after.gateway->ok &&
                       res.calls > 0;
      const double calls = static_cast<double>(res.calls);
      r.table.add_row(
          {bj::value(v.name), bj::value(static_cast<std::int64_t>(round)),
           bj::value(static_cast<std::int64_t>(c)), bj::value(static_cast<std::int64_t>(res.calls)),
           bj::value(res.seconds > 0 ? static_cast<double>(res.latency.count()) / res.seconds
                                     : 0.0),
           bj::value(res.latency.percentile(50)), bj::value(static_cast<std::int64_t>(res.errors)),
           number_or_null(cpu ? (after.gateway->cpu_us - before.gateway->cpu_us) / calls : 0,
                          cpu)});
      report_errors(r, v.name, res);
      report_gateway_end(r, gw);
    }
  }
  r.table.add_note(
      "gw CPU µs/call: the gateway process's user + system CPU over the window divided by the "
      "calls "
      "made. The repaired call is fixture__search with a mistyped name and a string for an "
      "integer, "
      "repaired on every call.");
  return r;
}

}  // namespace toolbridge::bench
