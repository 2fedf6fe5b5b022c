#include "frontend/admin.h"

#include <boost/beast/http.hpp>

#include "call/trajectory_name.h"
#include "frontend/client_identity.h"
#include "frontend/router.h"
#include "json/envelope.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

constexpr std::string_view kSessionsPath = "/sessions/";

std::string percent_decode(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

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
  std::string refused;
  const std::string owner = owner_of(ex, refused);
  const bool bad_method = req.method() != http::verb::delete_;
  const std::string bad_name = gateway::trajectory_name_error(name);
  if (bad_method || !bad_name.empty() || owner.empty()) {
    const auto status = bad_method ? http::status::method_not_allowed : http::status::bad_request;
    std::string message =
        "DELETE /sessions/NAME releases the per_session instances of session or trajectory NAME "
        "(percent-encoded)";
    if (!bad_name.empty()) message += ": " + bad_name;
    if (owner.empty() && !bad_method) message = refused;
    const std::string body = json::make_error({}, json::kInvalidRequest, message);
    transport::Headers headers;
    if (bad_method) headers.emplace_back("Allow", "DELETE");
    co_await ex.reply(status, "application/json", body, headers);
    co_return;
  }
  const std::size_t n = gateway_.release_for(name, owner, refused);
  if (!refused.empty()) {
    const std::string body = json::make_error({}, json::kInvalidRequest, refused);
    co_await ex.reply(http::status::forbidden, "application/json", body, {});
    co_return;
  }
  const std::string body = R"({"released":)" + std::to_string(n) + "}";
  co_await ex.reply(http::status::ok, "application/json", body, {});
}

asio::awaitable<void> Admin::not_found(transport::Exchange& ex) {
  const std::string body =
      "not found; MCP is served at /mcp, health at /healthz, metrics at /metrics, trajectories "
      "are released with DELETE /sessions/NAME\n";
  co_await ex.reply(http::status::not_found, "text/plain", body, {});
}

}  // namespace toolbridge::frontend
