#pragma once
// The repair stage: after resolve (which already matched a mistyped tool name), it makes a
// tool call's arguments fit the tool's input schema where that has one reading
// (repair/arguments.h), validates them against the schema compiled with the catalog
// (warn: logged and counted; enforce: answered with an isError result listing every violation,
// the server never called), and adds what it changed to the result's _meta. A valid call pays
// one scan of its arguments' top-level members, plus the schema check when validation is on.
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "call/stage.h"
#include "config/config.h"
#include "repair/schema.h"
#include "telemetry/metrics.h"

namespace toolbridge::repair {

class RepairStage final : public call::Stage {
 public:
  // `schema_of`: the schemas of the catalog (catalog::schemas_of).
  RepairStage(SchemaOf schema_of, const config::Config& config, telemetry::Metrics& metrics);
  // A reload replaced the servers: their repair settings are those of `servers` from now on
  // (a call already past this stage keeps what it was given).
  void set_servers(const std::vector<config::Server>& servers);
  std::string_view name() const override { return "repair"; }
  bool applies(const call::Call& call) const override { return call.is_tool_call(); }
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next next) override;

  // Repairs and validates `call` in place; a Result when it is answered here (enforce).
  // Separate from handle() so it can be tested without a chain.
  std::optional<call::Result> prepare(call::Call& call);

 private:
  boost::asio::awaitable<call::Result> report(call::Call& call, call::Next next);
  std::optional<call::Result> validate(call::Call& call, const config::RepairSettings& s,
                                       const ToolSchema& schema, std::string_view raw,
                                       const std::optional<boost::json::value>& parsed,
                                       const std::string& problem);
  void count_repairs(const call::Call& call);

  SchemaOf schema_of_;
  std::unordered_map<std::string, const config::Server*> servers_;
  telemetry::Metrics& metrics_;
  std::map<std::string, std::uint64_t, std::less<>> invalid_calls_;  // per tool, to thin logs
};

}  // namespace toolbridge::repair
