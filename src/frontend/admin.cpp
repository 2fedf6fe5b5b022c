#include "frontend/admin.h"

#include <boost/beast/http.hpp>

#include "call/trajectory_name.h"
#include "frontend/client_identity.h"
#include "frontend/router.h"
#include "frontend/trajectory_key.h"
#include "gateway/reload.h"
#include "json/envelope.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

constexpr std::string_view kSessionsPath = "/sessions/";

}  // namespace

asio::awaitable<void> Admin::health(transport::Exchange& ex) {
  const std::string body = gateway_.health_json();
  co_await ex.reply(http::status::ok, "application/json", body, {});
}

asio::awaitable<void> Admin::metrics(transport::Exchange& ex) {
  const std::string body = gateway_.metrics().render();
  co_await ex.reply(http::status::ok, "text/plain; version=0.0.4", body, {});
}

asio::awaitable<void> Admin::release(transport::Exchange& ex, std::string_view path) {
  // Releasing a trajectory without an MCP session: the reward step of a rollout may run in
  // another process than the agent (on the same address, or with the same tenant header).
  const auto& req = ex.request();
  const std::string name = percent_decode(path.substr(kSessionsPath.size()));
  const base::Expected<std::string> owner = owner_of(ex);
  const bool bad_method = req.method() != http::verb::delete_;
  const base::Status valid_name = call::check_trajectory_name(name);
  if (bad_method || !valid_name || !owner) {
    const auto status = bad_method ? http::status::method_not_allowed : http::status::bad_request;
    std::string message =
        "DELETE /sessions/NAME releases the per_session instances of session or trajectory NAME "
        "(percent-encoded)";
    if (!valid_name) message += ": " + valid_name.error();
    if (!owner && !bad_method) message = owner.error();
    const std::string body = json::make_error({}, json::kInvalidRequest, message);
    transport::Headers headers;
    if (bad_method) headers.emplace_back("Allow", "DELETE");
    co_await ex.reply(status, "application/json", body, headers);
    co_return;
  }
  const base::Expected<std::size_t> n = gateway_.release_for(name, *owner);
  if (!n) {
    const std::string body = json::make_error({}, json::kInvalidRequest, n.error());
    co_await ex.reply(http::status::forbidden, "application/json", body, {});
    co_return;
  }
  if (on_release_) on_release_(name);
  const std::string body = R"({"released":)" + std::to_string(*n) + "}";
  co_await ex.reply(http::status::ok, "application/json", body, {});
}

asio::awaitable<void> Admin::reload(transport::Exchange& ex) {
  std::string trigger = "admin";
  const gateway::ReloadReport report = co_await gateway_.reloader().reload(std::move(trigger));
  using Outcome = gateway::ReloadReport::Outcome;
  http::status status = http::status::ok;
  if (report.outcome == Outcome::kInvalid || report.outcome == Outcome::kRestartNeeded)
    status = http::status::unprocessable_entity;
  if (report.outcome == Outcome::kBusy || report.outcome == Outcome::kNoFile)
    status = http::status::conflict;
  const std::string body = report.to_json();
  co_await ex.reply(status, "application/json", body, {});
}

asio::awaitable<void> Admin::not_found(transport::Exchange& ex) {
  const std::string body =
      "not found; MCP is served at /mcp (or /t/TRAJECTORY/mcp), health at /healthz, metrics at "
      "/metrics, the config is reloaded with POST /admin/reload, trajectories "
      "are released with DELETE /sessions/NAME and shown at /v1/trajectories, the dashboard is "
      "at /dashboard\n";
  co_await ex.reply(http::status::not_found, "text/plain", body, {});
}

}  // namespace toolbridge::frontend
