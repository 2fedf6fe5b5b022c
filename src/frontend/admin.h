#pragma once
// The operator's endpoints: GET /healthz (servers, instances, breakers), GET /metrics
// (Prometheus text), DELETE /sessions/NAME (release a trajectory without an MCP session), and
// the 404 that names what is served.
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <string>
#include <string_view>

#include "gateway/gateway.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

class Admin {
 public:
  explicit Admin(gateway::Gateway& gateway) : gateway_(gateway) {}

  boost::asio::awaitable<void> health(transport::Exchange& ex);
  boost::asio::awaitable<void> metrics(transport::Exchange& ex);
  boost::asio::awaitable<void> release(transport::Exchange& ex, std::string_view path);
  // POST /admin/reload: re-reads the config file (docs/reload.md); 200 with the generation, hash
  // and what changed, or 422 (invalid file, a key that needs a restart) / 409 (busy) with why.
  boost::asio::awaitable<void> reload(transport::Exchange& ex);
  boost::asio::awaitable<void> not_found(transport::Exchange& ex);

  // Told the name of every trajectory DELETE /sessions/NAME released (token records age out).
  void on_release(std::function<void(const std::string&)> fn) { on_release_ = std::move(fn); }

 private:
  gateway::Gateway& gateway_;
  std::function<void(const std::string&)> on_release_;
};

}  // namespace toolbridge::frontend
