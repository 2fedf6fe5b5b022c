#include "frontend/server.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <boost/beast/http.hpp>

#include "base/held_bytes.h"
#include "frontend/origin_guard.h"
#include "frontend/surface_key.h"
#include "frontend/trajectory_key.h"
#include "gateway/reload.h"
#include "json/envelope.h"
#include "surfaces/registry.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using transport::Exchange;

namespace {

// Raises the soft fd limit to the hard one, and keeps a quarter of it for the servers' pipes and
// sockets, so a flood of connections cannot take the descriptors /healthz and the pools need.
std::size_t connection_cap(std::size_t configured) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return configured;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur == RLIM_INFINITY) return configured;
  const std::size_t cap = std::max<std::size_t>(limit.rlim_cur / 4 * 3, 16);
  if (configured > cap) {
    spdlog::warn("gateway.max_connections {} lowered to {}: the open-file limit is {}", configured,
                 cap, limit.rlim_cur);
    return cap;
  }
  return configured;
}

transport::HttpServerOptions listener_options(const config::Gateway& g) {
  transport::HttpServerOptions o;
  o.host = g.host;
  o.port = g.port;
  o.max_body_bytes = g.max_body_bytes;
  o.idle_timeout = g.idle_timeout;
  o.write_timeout = g.write_timeout;
  o.max_connections = connection_cap(g.max_connections);
  o.max_connections_per_client = g.max_connections_per_client;
  o.max_unread_bytes = g.max_unread_bytes;
  o.max_unread_bytes_per_client = g.max_unread_bytes_per_client;
  o.tls_cert_file = g.tls.cert_file;
  o.tls_key_file = g.tls.key_file;
  return o;
}

asio::awaitable<void> refuse(Exchange& ex, HeadRefusal refusal) {
  const std::string body = json::make_error({}, json::kInvalidRequest, refusal.message);
  co_await ex.reply(refusal.status, "application/json", body, {});
}

// The head is checked before routing, so no answer (404 and 405 included) goes to a request a
// browser page could have rebound. Not a coroutine when the request may go on.
asio::awaitable<void> checked(Exchange& ex, const OriginGuard& guard, const Router& router) {
  if (auto refusal = guard.check(ex.request())) return refuse(ex, std::move(*refusal));
  return router.route(ex);
}

}  // namespace

Server::Server(asio::io_context& io, config::Config config)
    : gateway_(io, std::move(config)),
      auth_(gateway_.config().gateway.auth),
      mcp_(gateway_),
      legacy_(gateway_),
      admin_(gateway_),
      batch_(gateway_),
      parse_(gateway_),
      observe_(gateway_),
      openai_(gateway_),
      guard_(gateway_.config().gateway.host, gateway_.config().gateway.allowed_origins),
      http_(
          io, listener_options(gateway_.config().gateway),
          [this](Exchange& ex) { return checked(ex, guard_, router_); }, gateway_.clock()) {
  observe_.set_token_records(&openai_.token_records());
  admin_.on_release([this](const std::string& name) {
    openai_.token_records().release(name, gateway_.clock().now());
  });
  batch_.set_task_store(mcp_.task_store());
  add_routes();
  add_admin_listener();
  register_metrics();
  // A reload (docs/reload.md) is checked as start() checks, and its API keys apply at once.
  gateway_.reloader().add_check(
      [](const config::Config& next) { return check_authenticated(next.gateway); });
  gateway_.reloader().on_applied([this] {
    auth_.replace(gateway_.config().gateway.auth);
    openai_.reconfigure(gateway_.config().models);
  });
}

void Server::add_admin_listener() {
  const std::string& listen = gateway_.config().gateway.admin_listen;
  if (listen.empty()) return;
  transport::HttpServerOptions o = listener_options(gateway_.config().gateway);
  o.tls_cert_file.clear();
  o.tls_key_file.clear();
  o.max_connections = 64;
  o.max_connections_per_client = 64;
  const std::size_t colon = listen.rfind(':');
  o.host = listen.substr(0, colon);
  if (o.host.size() > 2 && o.host.front() == '[') o.host = o.host.substr(1, o.host.size() - 2);
  o.port = static_cast<unsigned short>(std::stoi(listen.substr(colon + 1)));
  // The same handlers as on the main listener, with the head check but no token. Its Host is
  // checked by this listener's own address: a loopback admin listener beside a public one.
  const OriginGuard guard(o.host, gateway_.config().gateway.allowed_origins);
  auto& r = admin_router_;
  r.add(http::verb::get, "/healthz",
        [this](Exchange& ex, std::string_view) { return admin_.health(ex); });
  r.add(http::verb::get, "/metrics",
        [this](Exchange& ex, std::string_view) { return admin_.metrics(ex); });
  r.add(
      std::nullopt, "/sessions/",
      [this](Exchange& ex, std::string_view p) { return admin_.release(ex, p); }, true);
  r.add(http::verb::get, "/v1/trajectories",
        [this](Exchange& ex, std::string_view) { return observe_.trajectories(ex); });
  r.add(
      http::verb::get, "/v1/trajectories/",
      [this](Exchange& ex, std::string_view p) { return observe_.trajectory(ex, p); }, true);
  r.add(http::verb::get, "/dashboard",
        [this](Exchange& ex, std::string_view) { return observe_.dashboard(ex); });
  r.add(http::verb::get, "/dashboard/state",
        [this](Exchange& ex, std::string_view) { return observe_.state(ex); });
  r.add(http::verb::post, "/admin/reload",
        [this](Exchange& ex, std::string_view) { return admin_.reload(ex); });
  r.fallback([this](Exchange& ex, std::string_view) { return admin_.not_found(ex); });
  admin_http_ = std::make_unique<transport::HttpServer>(
      gateway_.io(), std::move(o),
      [this, guard](Exchange& ex) { return checked(ex, guard, admin_router_); }, gateway_.clock());
}

void Server::register_metrics() {
  auto& m = gateway_.metrics();
  m.gauge(
      "toolbridge_tasks",
      "Tasks of the MCP tasks extension the gateway keeps, running (working or "
      "input_required) and finished (within gateway.task_ttl).",
      [this](auto& out) {
        const auto& store = mcp_.task_store();
        const std::size_t running = store.running();
        out.emplace_back(telemetry::labels({{"state", "running"}}), static_cast<double>(running));
        out.emplace_back(telemetry::labels({{"state", "finished"}}),
                         static_cast<double>(store.size() - running));
      });
  m.gauge(
      "toolbridge_task_bytes",
      "Bytes of results, errors and input requests tasks keep (gateway.task_max_bytes bounds "
      "them).",
      [this](auto& out) { out.emplace_back("", static_cast<double>(mcp_.task_store().bytes())); });
  m.gauge("toolbridge_connections", "Open downstream HTTP connections.",
          [this](auto& out) { out.emplace_back("", static_cast<double>(http_.connections())); });
  m.gauge("toolbridge_connections_closed_total",
          "Downstream connections the gateway refused (503 over max_connections_per_client) or "
          "closed: shed near a cap (Connection: close on a response), idle past idle_timeout, or "
          "a client not reading past write_timeout or over max_unread_bytes.",
          [this](auto& out) {
            const auto& c = http_.counters();
            for (const auto& [reason, n] :
                 {std::pair{"refused", c.refused}, std::pair{"shed", c.shed},
                  std::pair{"idle", c.idle_closed}, std::pair{"write_timeout", c.write_timeouts},
                  std::pair{"unread", c.unread}, std::pair{"tls_handshake", c.tls_failures}}) {
              out.emplace_back(telemetry::labels({{"reason", reason}}), static_cast<double>(n));
            }
          });
  m.describe("toolbridge_connections_closed_total", "counter",
             "Downstream connections the gateway refused (503 over max_connections_per_client) or "
             "closed: shed near a cap (Connection: close on a response), idle past idle_timeout, "
             "or a client not reading past write_timeout or over max_unread_bytes.");
  m.gauge("toolbridge_accept_paused_total",
          "Times the listener stopped accepting at gateway.max_connections (new connections wait "
          "in the kernel's backlog until one closes).",
          [this](auto& out) {
            out.emplace_back("", static_cast<double>(http_.counters().accept_paused));
          });
  m.gauge("toolbridge_answer_bytes_held",
          "Answer bytes being written to clients, in all; over gateway.max_unread_bytes the "
          "servers' next answers wait unread until clients take theirs or stalled ones are closed.",
          [](auto& out) {
            out.emplace_back("", static_cast<double>(base::held_answer_bytes().held()));
          });
  m.gauge("toolbridge_answer_read_waits_total",
          "Times a reader of a server's answers waited because the answer bytes held for clients "
          "were over gateway.max_unread_bytes.",
          [](auto& out) {
            out.emplace_back("", static_cast<double>(base::held_answer_bytes().waits()));
          });
  m.describe("toolbridge_answer_read_waits_total", "counter",
             "Times a reader of a server's answers waited because the answer bytes held for "
             "clients were over gateway.max_unread_bytes.");
  m.describe("toolbridge_accept_paused_total", "counter",
             "Times the listener stopped accepting at gateway.max_connections (new connections "
             "wait in the kernel's backlog until one closes).");
}

void Server::add_routes() {
  router_.add(http::verb::get, "/mcp",
              guarded([this](Exchange& ex, std::string_view) { return mcp_.get(ex); }));
  router_.add(http::verb::post, "/mcp",
              guarded([this](Exchange& ex, std::string_view) { return mcp_.post(ex); }));
  router_.add(http::verb::delete_, "/mcp",
              guarded([this](Exchange& ex, std::string_view) { return mcp_.del(ex); }));
  for (const char* path : {"/sse", "/messages"}) {
    router_.add(std::nullopt, path, guarded([this](Exchange& ex, std::string_view p) {
                  return legacy_.handle(ex, p);
                }));
  }
  router_.add(http::verb::post, "/v1/batch",
              guarded([this](Exchange& ex, std::string_view) { return batch_.post(ex); }));
  router_.add(http::verb::post, "/v1/parse",
              guarded([this](Exchange& ex, std::string_view) { return parse_.post(ex); }));
  router_.add(http::verb::post, "/v1/parse/streams",
              guarded([this](Exchange& ex, std::string_view) { return parse_.open(ex); }));
  router_.add(std::nullopt, "/v1/parse/streams/",
              guarded([this](Exchange& ex, std::string_view p) { return parse_.stream(ex, p); }),
              true);
  router_.add(http::verb::get, "/v1/tools",
              guarded([this](Exchange& ex, std::string_view) { return batch_.tools(ex); }));
  router_.add(std::nullopt, std::string(kTrajectoryPrefix),
              guarded([this](Exchange& ex, std::string_view p) { return for_trajectory(ex, p); }),
              true);
  router_.add(std::nullopt, std::string(kSurfacePrefix),
              guarded([this](Exchange& ex, std::string_view p) { return for_surface(ex, p); }),
              true);
  // Admin endpoints: the head check in front of the router keeps pages from metrics and health.
  router_.add(http::verb::get, "/healthz",
              guarded([this](Exchange& ex, std::string_view) { return admin_.health(ex); }));
  router_.add(http::verb::get, "/metrics",
              guarded([this](Exchange& ex, std::string_view) { return admin_.metrics(ex); }));
  router_.add(std::nullopt, "/sessions/",
              guarded([this](Exchange& ex, std::string_view p) { return admin_.release(ex, p); }),
              true);
  router_.add(http::verb::post, "/admin/reload",
              guarded([this](Exchange& ex, std::string_view) { return admin_.reload(ex); }));
  // The OpenAI-compatible LLM endpoints, also without models: a reload may add the first one.
  for (const char* path : {"/v1/chat/completions", "/v1/completions"}) {
    router_.add(http::verb::post, path,
                guarded([this](Exchange& ex, std::string_view p) { return openai_.post(ex, p); }));
  }
  router_.add(http::verb::get, "/v1/models",
              guarded([this](Exchange& ex, std::string_view) { return openai_.models(ex); }));
  router_.add(http::verb::get, "/v1/trajectories", guarded([this](Exchange& ex, std::string_view) {
                return observe_.trajectories(ex);
              }));
  router_.add(
      http::verb::get, "/v1/trajectories/",
      guarded([this](Exchange& ex, std::string_view p) { return observe_.trajectory(ex, p); }),
      true);
  router_.add(http::verb::get, "/dashboard",
              guarded([this](Exchange& ex, std::string_view) { return observe_.dashboard(ex); }));
  router_.add(http::verb::get, "/dashboard/state",
              guarded([this](Exchange& ex, std::string_view) { return observe_.state(ex); }));
  router_.fallback([this](Exchange& ex, std::string_view) { return admin_.not_found(ex); });
}

asio::awaitable<void> Server::for_surface(Exchange& ex, std::string_view path) {
  const auto split = split_surface_path(path);
  const auto method = ex.request().method();
  if (!split || split->endpoint != "mcp") {
    co_await admin_.not_found(ex);
    co_return;
  }
  base::Status known = config::check_surface_name(split->surface);
  if (known && !gateway_.surfaces().has(split->surface))
    known = base::fail(gateway_.surfaces().unknown_message(split->surface));
  if (!known) {
    const std::string body = json::make_error(
        {}, json::kInvalidRequest, "not found: the surface in the URL path: " + known.error());
    co_await ex.reply(http::status::not_found, "application/json", body, {});
  } else if (method == http::verb::post) {
    co_await mcp_.post(ex, split->trajectory, split->surface);
  } else if (method == http::verb::get) {
    co_await mcp_.get(ex, split->trajectory, split->surface);
  } else if (method == http::verb::delete_) {
    co_await mcp_.del(ex, split->trajectory, split->surface);
  } else {
    const transport::Headers allow{{"Allow", "GET, POST, DELETE"}};
    const std::string body =
        json::make_error({}, json::kInvalidRequest, "Method not allowed on " + std::string(path));
    co_await ex.reply(http::status::method_not_allowed, "application/json", body, allow);
  }
}

asio::awaitable<void> Server::for_trajectory(Exchange& ex, std::string_view path) {
  // /t/TRAJECTORY/s/NAME/mcp: a trajectory's view through a surface.
  if (split_surface_path(path)) {
    co_await for_surface(ex, path);
    co_return;
  }
  const auto split = split_trajectory_path(path);
  const auto method = ex.request().method();
  const std::string_view endpoint = split ? split->endpoint : std::string_view();
  if (endpoint == "sse") {
    co_await legacy_.handle(ex, "/sse", split->name);
  } else if (endpoint != "mcp") {
    co_await admin_.not_found(ex);
  } else if (method == http::verb::post) {
    co_await mcp_.post(ex, split->name);
  } else if (method == http::verb::get) {
    co_await mcp_.get(ex, split->name);
  } else if (method == http::verb::delete_) {
    co_await mcp_.del(ex, split->name);
  } else {
    const transport::Headers allow{{"Allow", "GET, POST, DELETE"}};
    const std::string body =
        json::make_error({}, json::kInvalidRequest, "Method not allowed on " + std::string(path));
    co_await ex.reply(http::status::method_not_allowed, "application/json", body, allow);
  }
}

namespace {
asio::awaitable<void> forbid(Exchange& ex, std::string why) {
  const std::string body = json::make_error({}, json::kInvalidRequest, "Forbidden: " + why);
  co_await ex.reply(http::status::forbidden, "application/json", body, {});
}
}  // namespace

Handler Server::guarded(Handler handler) {
  // Not a coroutine when the request may go on: the handler's awaitable is returned as is.
  return [this, handler = std::move(handler)](Exchange& ex,
                                              std::string_view path) -> asio::awaitable<void> {
    if (auth_.enabled() && !Auth::open_path(path)) {
      base::Expected<const config::ApiKey*> key = auth_.verify(ex);
      if (!key) return auth_.challenge(ex, key.error());
      ex.principal = *key;
      if (base::Status allowed = check_key_surface(*ex.principal, ex.request(), path); !allowed)
        return forbid(ex, allowed.error());
    }
    return handler(ex, path);
  };
}

base::Status Server::reload_tls() {
  if (!http_.tls()) return base::fail("TLS is not configured (gateway.tls)");
  return http_.reload_tls();
}

base::Status Server::start() {
  if (base::Status may = check_authenticated(gateway_.config().gateway); !may) return may;
  if (base::Status listening = http_.listen(); !listening) return listening;
  if (admin_http_) {
    if (base::Status listening = admin_http_->listen(); !listening)
      return base::fail("admin_listen: " + listening.error());
  }
  if (base::Status started = gateway_.start(); !started) return started;
  openai_.start();
  return {};
}

asio::awaitable<void> Server::shutdown() {
  if (gateway_.stopping()) co_return;
  gateway_.begin_stop();
  http_.stop_accepting();
  // A task's call has no client waiting on it and its result would die with this gateway's
  // memory: it is cancelled upstream now rather than waited for.
  mcp_.task_store().cancel_running("the gateway is stopping");
  // Calls in flight may finish (their answers still reach the agents) for up to shutdown_grace.
  co_await gateway_.drain();
  co_await openai_.drain(gateway_.config().gateway.shutdown_grace);
  parse_.stop();
  http_.stop();
  if (admin_http_) admin_http_->stop();
  openai_.stop();
  co_await gateway_.stop_servers();
}

}  // namespace toolbridge::frontend
