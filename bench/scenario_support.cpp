#include "scenario_support.h"

#include <fmt/format.h>
#include <unistd.h>

#include <boost/json/parse.hpp>

#include "json/envelope.h"
#include "mcp_http.h"

namespace toolbridge::bench {

namespace bj = boost::json;
using namespace std::chrono_literals;

PathSample sample_path(const GatewayProcess* gw, pid_t server) {
  PathSample p;
  if (gw) p.gateway = gw->sample();
  p.server = sample_process(server);
  p.bench = sample_process(::getpid());
  return p;
}

void drain(boost::asio::io_context& io) {
  io.run_for(2s);
  io.restart();
}

std::chrono::milliseconds window(const Options& o, double short_s, double full_s) {
  const double s = o.window_seconds > 0 ? o.window_seconds : (o.short_mode ? short_s : full_s);
  return std::chrono::milliseconds(static_cast<long>(s * 1000));
}

std::string yaml_string(const std::string& s) {
  return json::quote(s);
}  // JSON strings are YAML

std::vector<std::string> fastmcp_argv(const Options& o) {
  return {o.python_bin, o.bench_python_dir + "/fastmcp_server.py"};
}

std::string gateway_config(const Options& o, bool with_everything, bool with_fastmcp,
                           const std::string& trace_file) {
  std::string y =
      "gateway:\n"
      "  listen: 127.0.0.1:0\n" +
      (trace_file.empty() ? std::string() : "  trace: " + yaml_string(trace_file) + "\n") +
      std::string(o.idle_limits ? "  max_calls_in_flight: 1000000\n" : "") +
      "servers:\n"
      "  fixture:\n"
      "    command: " +
      yaml_string(o.fixture_bin) + "\n" +
      std::string(o.idle_limits ? "    concurrency_limit: 1000000\n" : "");
  if (with_everything) {
    y += "  everything:\n"
         "    command: " +
         yaml_string(o.node_bin) +
         "\n"
         "    args: [" +
         yaml_string(o.everything_js) + ", \"stdio\"]\n";
  }
  if (with_fastmcp) {
    const auto argv = fastmcp_argv(o);
    y += "  fastmcp:\n"
         "    command: " +
         yaml_string(argv[0]) +
         "\n"
         "    args: [" +
         yaml_string(argv[1]) + "]\n";
  }
  return y;
}

pid_t server_pid(const GatewayProcess& gw, const std::string& server) {
  HttpResult res = http_get(gw.host(), gw.port(), "/healthz", 5s);
  boost::system::error_code ec;
  bj::value v = bj::parse(res.body, ec);
  if (ec || !v.is_object()) return -1;
  const auto* servers = v.as_object().if_contains("servers");
  const auto* s =
      servers && servers->is_object() ? servers->as_object().if_contains(server) : nullptr;
  const auto* pid = s && s->is_object() ? s->as_object().if_contains("pid") : nullptr;
  return pid && pid->is_number() ? static_cast<pid_t>(pid->to_number<std::int64_t>()) : -1;
}

bj::value number_or_null(double v, bool available) {
  return available ? bj::value(v) : bj::value(nullptr);
}

void report_errors(ScenarioResult& r, const std::string& what, const LoadResult& res) {
  if (res.errors == 0) return;
  r.ok = false;
  r.problems.push_back(
      fmt::format("{}: {} error(s); first: {}", what, res.errors, res.first_error));
}

void report_gateway_end(ScenarioResult& r, GatewayProcess& gw) {
  for (const auto& w : gw.warnings()) r.problems.push_back("gateway log: " + w);
  const std::string how = gw.stop();
  if (how != "exited with code 0") {
    r.ok = false;
    r.problems.push_back("gateway stop: " + how + "\n" + gw.stderr_tail());
  }
}

}  // namespace toolbridge::bench
