#pragma once
// The idempotency stage (after repair, before the cache): a tools/call with an idempotency key
// (_meta["toolbridge/idempotency_key"], a batch call's `id`) runs at most once per trajectory
// and key within gateway.idempotency_ttl. The first call's execution belongs to the stage, not
// to its caller: a caller that disconnects or cancels leaves it running, and a retry with the
// same key and arguments gets its result (waiting for it if it still runs). The same key with
// another tool or other arguments is -32602. Calls without a key are stepped over.
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "base/clock.h"
#include "call/stage.h"
#include "config/config.h"
#include "idempotency/key_meta.h"
#include "idempotency/ledger.h"
#include "telemetry/metrics.h"

namespace toolbridge::idempotency {

class IdempotencyStage final : public call::Stage {
 public:
  IdempotencyStage(boost::asio::io_context& io, const config::Gateway& config,
                   telemetry::Metrics& metrics, const base::Clock& clock);

  std::string_view name() const override { return "idempotency"; }
  bool applies(const call::Call& call) const override {
    return call.is_tool_call() && !call.task_augmented && !key_of(call).empty();
  }
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next next) override;

  const Ledger& ledger() const { return ledger_; }

 private:
  // Runs the rest of the chain on the stage's own copy of the call, then finishes the entry.
  void start(const call::Call& call, call::Next next, std::string scope,
             std::shared_ptr<Ledger::Entry> entry);
  boost::asio::awaitable<call::Result> run(std::shared_ptr<call::Call> call, call::Next next);
  // The caller's wait for the entry's result: bounded by its deadline, ended by its cancel.
  boost::asio::awaitable<call::Result> wait(call::Call& call, std::shared_ptr<Ledger::Entry> entry);
  void count(std::string_view result);

  boost::asio::io_context& io_;
  telemetry::Metrics& metrics_;
  const base::Clock& clock_;
  Ledger ledger_;
};

}  // namespace toolbridge::idempotency
