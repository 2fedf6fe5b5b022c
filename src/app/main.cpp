// toolbridge: one MCP endpoint in front of supervised MCP servers.
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string_view>

#include "app/commands.h"
#include "base/expected.h"
#include "base/memory.h"
#include "base/spawn.h"
#include "config/config.h"
#include "config/file.h"
#include "frontend/server.h"
#include "gateway/reload.h"
#include "process/cgroup_tree.h"
#include "process/child.h"

namespace asio = boost::asio;
using namespace toolbridge;

namespace {

std::string exe_dir() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : p.parent_path().string();
}

config::Config load(const std::string& path) {
  if (path.empty()) {
    return config::load_text(app::default_config_yaml(exe_dir()), "<embedded default config>",
                             false);
  }
  return config::load_file(path);
}

// "host:port", "[::1]:port" or ":port".
bool apply_listen(const std::string& listen, config::Gateway& g) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  const long port = std::strtol(listen.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port < 0 || port > 65535 || colon + 1 == listen.size()) return false;
  if (!host.empty()) g.host = host;
  g.port = static_cast<unsigned short>(port);
  return true;
}

// The command line's overrides of the file: --listen and --record.
base::Status apply_overrides(const std::string& listen, const std::string& record_dir,
                             config::Config& cfg) {
  if (!listen.empty() && !apply_listen(listen, cfg.gateway))
    return base::fail("--listen expects HOST:PORT, got '" + listen + "'");
  if (!record_dir.empty()) {
    // --record DIR: gateway.record.path, made absolute.
    std::error_code ec;
    cfg.gateway.record.path = std::filesystem::absolute(record_dir, ec).lexically_normal().string();
    if (cfg.gateway.record.path.size() > 1 && cfg.gateway.record.path.back() == '/')
      cfg.gateway.record.path.pop_back();
  }
  return base::Status::success();
}

int serve(const std::string& config_path, const std::string& listen, const std::string& log_level,
          bool wait_ready, const std::string& record_dir) {
  config::Config cfg;
  std::string text;  // of the config file, kept for a reload to compare with
  try {
    if (config_path.empty()) {
      cfg = load(config_path);
    } else {
      text = config::read_file_text(config_path);
      cfg = config::load_text(text, config_path, config::looks_like_json(config_path, text));
    }
  } catch (const config::ConfigError& e) {
    std::cerr << "toolbridge: " << e.what() << "\n";
    return 2;
  }
  if (base::Status applied = apply_overrides(listen, record_dir, cfg); !applied) {
    std::cerr << "toolbridge: " << applied.error() << "\n";
    return 2;
  }
  spdlog::set_level(spdlog::level::from_str(log_level.empty() ? cfg.gateway.log_level : log_level));
  ::signal(SIGPIPE, SIG_IGN);
  base::map_large_blocks_apart();
  // Each instance holds four descriptors and each agent connection one: 1,000 per_session
  // instances do not fit the common soft limit of 1,024, so take what the hard limit allows.
  if (rlimit lim{}; ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  // One cgroup per instance keeps what a server's children setsid() away from killable; made
  // before the watchdog, which destroys the tree if the gateway dies by SIGKILL.
  if (base::Status enabled = process::cgroups::enable(); !enabled) {
    spdlog::info("no cgroup v2 for server instances ({}): containment by process group",
                 enabled.error());
  }
  // Before any thread: the watchdog that kills children's process groups if we die by SIGKILL.
  process::GroupReaper::start();

  asio::io_context io(1);
  frontend::Server gw(io, cfg);
  if (!config_path.empty()) {
    // A reload reads the file as start-up did, with the same command line overrides.
    gw.gateway().reloader().set_source(
        config_path, text, [config_path, listen, record_dir](const std::string& next_text) {
          config::Config next = config::load_text(next_text, config_path,
                                                  config::looks_like_json(config_path, next_text));
          if (base::Status applied = apply_overrides(listen, record_dir, next); !applied)
            throw config::ConfigError(applied.error());
          return next;
        });
  }
  if (base::Status started = gw.start(); !started) {
    std::cerr << "toolbridge: " << started.error() << "\n";
    return 1;
  }
  std::string shown_host = cfg.gateway.host.find(':') != std::string::npos
                               ? "[" + cfg.gateway.host + "]"
                               : cfg.gateway.host;
  auto announce = [&] {
    const char* scheme = gw.tls() ? "https" : "http";
    std::cout << "listening on " << scheme << "://" << shown_host << ":" << gw.port() << std::endl;
    if (gw.admin_port() != 0) {
      const std::string& admin = cfg.gateway.admin_listen;
      spdlog::info("admin endpoints (no token) at http://{}:{}", admin.substr(0, admin.rfind(':')),
                   gw.admin_port());
    }
    spdlog::info("toolbridge serving MCP at {}://{}:{}/mcp with {} server(s) from {}", scheme,
                 shown_host, gw.port(), cfg.servers.size(), cfg.source);
  };
  if (wait_ready) {
    // For scripts: the line means every server is ready or failed (or ready_timeout passed).
    asio::co_spawn(io, gw.gateway().until_settled(), [&](std::exception_ptr e) {
      base::log_failure("the wait for the servers' start")(e);
      announce();
    });
  } else {
    announce();
  }

  asio::signal_set signals(io, SIGINT, SIGTERM);
  bool stopping = false;
  std::function<void(boost::system::error_code, int)> on_signal = [&](boost::system::error_code ec,
                                                                      int sig) {
    if (ec) return;
    if (stopping) {
      spdlog::warn("second signal: exiting now");
      std::_Exit(1);  // the watchdog and parent-death signals take the children down
    }
    stopping = true;
    spdlog::info("signal {}: stopping servers", sig);
    asio::co_spawn(io, gw.shutdown(), [&](std::exception_ptr e) {
      base::log_failure("shutdown")(e);
      io.stop();
    });
    signals.async_wait(on_signal);
  };
  signals.async_wait(on_signal);
  // SIGHUP: a renewed certificate is taken without a restart (open connections keep theirs),
  // and the config file is read again (docs/reload.md).
  asio::signal_set hangup(io, SIGHUP);
  std::function<void(boost::system::error_code, int)> on_hangup = [&](boost::system::error_code ec,
                                                                      int) {
    if (ec) return;
    if (gw.tls()) {
      if (base::Status reloaded = gw.reload_tls(); !reloaded) {
        spdlog::error("SIGHUP: {}; the previous certificate stays in use", reloaded.error());
      } else {
        spdlog::info("SIGHUP: TLS certificate and key reloaded");
      }
    }
    if (!config_path.empty()) {
      // The outcome is logged by the reload itself.
      asio::co_spawn(io, gw.gateway().reloader().reload("SIGHUP"),
                     [](std::exception_ptr e, gateway::ReloadReport) {
                       base::log_failure("reload (SIGHUP)")(e);
                     });
    }
    hangup.async_wait(on_hangup);
  };
  hangup.async_wait(on_hangup);
  io.run();
  process::GroupReaper::stop();
  process::cgroups::disable();
  spdlog::info("stopped");
  return 0;
}

// Stdio servers whose command would not start: not on the PATH they get, or not executable.
// A cwd naming ${session.dir} only exists at run time, so such a relative command is not checked.
int report_missing_commands(const config::Config& cfg) {
  int missing = 0;
  for (const auto& s : cfg.servers) {
    if (s.command.empty() || !s.enabled) continue;
    const bool runtime_cwd = s.cwd.find("${session.") != std::string::npos;
    if (runtime_cwd && s.command.find('/') != std::string::npos && s.command.front() != '/')
      continue;
    process::Spec spec{
        {s.command}, process::build_env(s.env, s.inherit_env), runtime_cwd ? "" : s.cwd};
    if (auto exe = process::find_executable(spec); !exe) {
      std::cerr << cfg.source << ": servers." << s.name << ".command: " << exe.error() << "\n";
      ++missing;
    }
  }
  return missing;
}

int check_config(const std::string& path) {
  try {
    const config::Config cfg = load(path);
    if (report_missing_commands(cfg) > 0) return 1;
    std::cout << cfg.source << ": OK, " << cfg.servers.size() << " server(s)";
    for (const auto& s : cfg.servers)
      std::cout << (&s == &cfg.servers.front() ? ": " : ", ") << s.name;
    std::cout << "\n";
    return 0;
  } catch (const config::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "serve") base::tune_allocator(argv);
  spdlog::set_default_logger(spdlog::stderr_color_mt("toolbridge"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");

  CLI::App app{"toolbridge: one MCP endpoint in front of supervised MCP servers"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "toolbridge " TOOLBRIDGE_VERSION);
  const char* env_url = std::getenv("TOOLBRIDGE_URL");
  std::string url = env_url ? env_url : "http://127.0.0.1:8848/mcp";

  std::string config_path, listen, log_level;
  auto* serve_cmd = app.add_subcommand("serve", "Run the gateway");
  serve_cmd->add_option("-c,--config", config_path,
                        "YAML or mcpServers JSON file (default: embedded config)");
  serve_cmd->add_option("-l,--listen", listen,
                        "HOST:PORT to listen on (overrides the config; port 0 picks one)");
  serve_cmd->add_option("--log-level", log_level, "trace, debug, info, warn, error");
  bool wait_ready = false;
  serve_cmd->add_flag("--wait-ready", wait_ready,
                      "print the listening line once every server is ready or failed "
                      "(gateway.ready_timeout at most)");

  std::string record_dir;
  serve_cmd->add_option("--record", record_dir,
                        "record every tool call into a new run under DIR (gateway.record.path)");

  std::string check_path;
  auto* check_cmd = app.add_subcommand("check-config", "Validate a configuration file and exit");
  check_cmd->add_option("file", check_path, "YAML or mcpServers JSON file")->required();

  bool json_output = false;
  auto* tools_cmd = app.add_subcommand("tools", "List the tools of a running gateway");
  tools_cmd->add_option("-u,--url", url, "gateway MCP endpoint (env TOOLBRIDGE_URL)");
  tools_cmd->add_flag("--json", json_output, "print the raw tools/list result");

  std::string name, json_args;
  std::vector<std::string> kv;
  bool raw = false;
  auto* call_cmd =
      app.add_subcommand("call", "Call a tool on a running gateway: call NAME key=value ...");
  call_cmd->add_option("name", name, "tool name as listed by `toolbridge tools`")->required();
  call_cmd->add_option("args", kv, "arguments as key=value (values that parse as JSON are JSON)");
  call_cmd->add_option("--json", json_args, "arguments as one JSON object");
  call_cmd->add_option("-u,--url", url, "gateway MCP endpoint (env TOOLBRIDGE_URL)");
  call_cmd->add_flag("--raw", raw, "print the raw tools/call result");

  std::string only_server;
  auto* stdio_cmd = app.add_subcommand("stdio",
                                       "Serve MCP on stdin/stdout, forwarding to a running gateway "
                                       "(for clients that launch a command)");
  stdio_cmd->add_option("-u,--url", url, "gateway MCP endpoint (env TOOLBRIDGE_URL)");
  stdio_cmd->add_option("-s,--server", only_server,
                        "expose only this server's tools and prompts, unprefixed");

  auto* reload_cmd = app.add_subcommand(
      "reload", "Make a running gateway re-read its config file (POST /admin/reload)");
  reload_cmd->add_option("-u,--url", url, "gateway MCP endpoint or base URL (env TOOLBRIDGE_URL)");

  auto* cassette_cmd = app.add_subcommand("cassette", "Read recorded runs (gateway.record)");
  cassette_cmd->require_subcommand(1);
  std::string cassette_a, cassette_b;
  auto* dump_cmd = cassette_cmd->add_subcommand("dump", "Print a run's servers and calls");
  dump_cmd->add_option("dir", cassette_a, "a run directory, or a directory of runs (the latest)")
      ->required();
  auto* diff_cmd = cassette_cmd->add_subcommand(
      "diff", "Per trajectory, the first call where two runs diverge; per tool, changed results");
  diff_cmd->add_option("a", cassette_a, "the first run")->required();
  diff_cmd->add_option("b", cassette_b, "the second run")->required();

  CLI11_PARSE(app, argc, argv);
  if (*serve_cmd) return serve(config_path, listen, log_level, wait_ready, record_dir);
  if (*dump_cmd) return app::run_cassette_dump(cassette_a);
  if (*diff_cmd) return app::run_cassette_diff(cassette_a, cassette_b);
  if (*check_cmd) return check_config(check_path);
  if (*tools_cmd) return app::run_tools(url, json_output);
  if (*call_cmd) return app::run_call(url, name, kv, json_args, raw);
  if (*reload_cmd) return app::run_reload(url);
  if (*stdio_cmd) return app::run_stdio_shim(url, only_server);
  return 2;
}
