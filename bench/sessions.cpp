// sessions: what the first call of a new trajectory costs on a per_session server, with warm
// spares and without, next to a call on a session that already has its instance.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <optional>

#include "gateway_process.h"
#include "mcp_http.h"
#include "scenarios.h"

namespace toolbridge::bench {

namespace asio = boost::asio;
namespace bj = boost::json;
using namespace std::chrono_literals;

namespace {

struct Server {
  std::string label;
  std::chrono::milliseconds gap;  // between new sessions: well above start time / spares
  std::string command;
  std::vector<std::string> args;
  std::string tool;       // a cheap tool of that server
  std::string arguments;  // its arguments, JSON
};

struct Measured {
  Latencies warm;   // calls on a session that already holds its instance
  Latencies first;  // the first call of each new session
  std::string error;
};

// Opens `sessions` sessions one after another; each makes its first call (timed), then `warm`
// more calls (timed), then is deleted, which stops its instance. One session first, untimed, so
// the catalog instance the gateway started with is used up.
asio::awaitable<Measured> drive(std::string host, unsigned short port, const Server& server,
                                std::size_t sessions, std::size_t warm, std::chrono::milliseconds gap) {
  Measured m;
  auto ex = co_await asio::this_coro::executor;
  asio::steady_timer pace(ex);
  for (std::size_t i = 0; i <= sessions && m.error.empty(); ++i) {
    // New trajectories arrive `gap` apart (a rollout's trajectories do not all start at once).
    pace.expires_after(gap);
    boost::system::error_code ec;
    co_await pace.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    McpHttpSession s(ex, host, port, 60s);
    std::string err = co_await s.open();
    if (!err.empty()) {
      m.error = "initialize: " + err;
      break;
    }
    for (std::size_t c = 0; c <= warm && err.empty(); ++c) {
      const auto t0 = std::chrono::steady_clock::now();
      err = co_await s.call_tool("s__" + server.tool, server.arguments, 1);
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (i == 0) continue;
      (c == 0 ? m.first : m.warm).add(us);
    }
    if (!err.empty()) m.error = server.tool + ": " + err;
    co_await s.close();
  }
  co_return m;
}

template <class T>
T run_to_end(asio::io_context& io, asio::awaitable<T> task) {
  std::optional<T> out;
  std::exception_ptr failure;
  asio::co_spawn(io, std::move(task), [&](std::exception_ptr e, T value) {
    failure = e;
    if (!e) out = std::move(value);
  });
  io.run();
  io.restart();
  if (failure) std::rethrow_exception(failure);
  return std::move(*out);
}

std::string yaml_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", \"" : "\"") + items[i] + "\"";
  return out + "]";
}

}  // namespace

ScenarioResult run_sessions(const Options& o) {
  const std::size_t sessions = o.short_mode ? 8 : 40;
  const std::size_t warm = o.short_mode ? 5 : 20;
  ScenarioResult r{Table("sessions",
                         fmt::format("sessions: first call of a new per_session session ({} sessions, one "
                                     "at a time) vs a call on a warm session",
                                     sessions),
                         {{"server"},
                          {"spares"},
                          {"arrival gap ms"},
                          {"first call p50 ms", 2},
                          {"first call p90 ms", 2},
                          {"warm call p50 ms", 2},
                          {"first/warm p50", 1}})};
  std::vector<Server> servers{{"C++ fixture", 20ms, o.fixture_bin, {}, "echo", R"({"text":"hi"})"}};
  if (!o.short_mode && std::filesystem::exists(o.everything_js)) {
    servers.push_back({"server-everything (Node)", 200ms, o.node_bin, {o.everything_js, "stdio"}, "echo",
                       R"({"message":"hi"})"});
  }
  for (const auto& server : servers) {
    for (std::size_t spares : {std::size_t{4}, std::size_t{0}}) {
      const std::string config = fmt::format(
          "servers:\n  s:\n    command: \"{}\"\n    args: {}\n    policy: per_session\n    spares: {}\n",
          server.command, yaml_list(server.args), spares);
      std::cerr << fmt::format("sessions: {} with {} spares\n", server.label, spares);
      GatewayProcess gw;
      if (std::string err = gw.start(o.toolbridge_bin, config, 60s); !err.empty()) {
        r.ok = false;
        r.problems.push_back(server.label + ": gateway start: " + err);
        continue;
      }
      asio::io_context io(1);
      Measured m = run_to_end(io, drive(gw.host(), gw.port(), server, sessions, warm, server.gap));
      gw.stop();
      if (!m.error.empty()) {
        r.ok = false;
        r.problems.push_back(fmt::format("{} (spares {}): {}", server.label, spares, m.error));
        continue;
      }
      const double first = m.first.percentile(50) / 1000, warm_p50 = m.warm.percentile(50) / 1000;
      r.table.add_row({bj::value(server.label), bj::value(static_cast<std::int64_t>(spares)),
                       bj::value(static_cast<std::int64_t>(server.gap.count())),
                       bj::value(first), bj::value(m.first.percentile(90) / 1000), bj::value(warm_p50),
                       bj::value(warm_p50 > 0 ? first / warm_p50 : 0.0)});
    }
  }
  r.table.add_note("first call: tools/call right after initialize on a new session, which binds the "
                   "session to an instance: a warm spare, or (spares 0) one spawned and initialised "
                   "for it. Sessions are deleted after their calls, which stops their instance. New "
                   "sessions arrive one per arrival gap; spares are refilled 50 ms after one is taken.");
  return r;
}

}  // namespace toolbridge::bench
