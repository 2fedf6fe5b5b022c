#pragma once
// The breaker stage: refuses calls to a server whose breaker is open, and feeds the outcome of
// every call it admitted that reached the server back into that server's breaker.
#include <memory>
#include <string>
#include <unordered_map>

#include "call/stage.h"
#include "config/config.h"
#include "policy/breaker.h"
#include "telemetry/metrics.h"

namespace toolbridge::policy {

class BreakerStage final : public call::Stage {
 public:
  BreakerStage(const std::vector<config::Server>& servers, telemetry::Metrics& metrics,
               const base::Clock& clock);

  std::string_view name() const override { return "breaker"; }
  bool applies(const call::Call& call) const override;
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next next) override;

  // The breaker of a configured server (for /healthz); null for an unknown name.
  const Breaker* find(const std::string& server) const;

  // A reload replaced the servers: a new server gets a breaker, a server whose breaker settings
  // changed a fresh one, a removed server none (a call still in one finishes with it).
  void set_servers(const std::vector<config::Server>& servers);

 private:
  std::unique_ptr<Breaker> make_breaker(const config::Server& s) const;

  telemetry::Metrics& metrics_;
  const base::Clock& clock_;
  std::unordered_map<std::string, std::unique_ptr<Breaker>> breakers_;
  std::vector<std::unique_ptr<Breaker>> replaced_;  // calls in flight may still report to them
};

}  // namespace toolbridge::policy
