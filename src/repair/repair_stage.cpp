#include "repair/repair_stage.h"

#include <spdlog/spdlog.h>

#include <boost/json.hpp>

#include "json/envelope.h"
#include "json/parse.h"
#include "repair/answer.h"
#include "repair/arguments.h"
#include "repair/result_meta.h"

namespace toolbridge::repair {

namespace bj = boost::json;
using call::Call;
using call::Result;

namespace {

constexpr std::string_view kRepairsMetric = "toolbridge_repairs_total";
constexpr std::string_view kInvalidMetric = "toolbridge_invalid_calls_total";
constexpr std::size_t kMaxViolationsShown = 20;

// "/limit: Value type not permitted … (the schema expects integer)".
std::string describe(const Violation& v, const ToolSchema& schema) {
  std::string line =
      "- " + (v.pointer.empty() ? std::string("(the arguments)") : v.pointer) + ": " + v.message;
  if (v.pointer.size() > 1 && v.pointer.find('/', 1) == std::string::npos) {
    if (const Parameter* p = schema.parameter(v.pointer.substr(1))) {
      std::string expects;
      for (const auto& t : p->types) expects += (expects.empty() ? "" : " or ") + t;
      if (!p->enum_values.empty()) {
        bj::array values(p->enum_values.begin(), p->enum_values.end());
        expects += (expects.empty() ? "one of " : ", one of ") + abbreviate(bj::serialize(values));
      }
      if (!expects.empty()) line += " (the schema expects " + expects + ")";
    }
  }
  return line;
}

}  // namespace

RepairStage::RepairStage(SchemaOf schema_of, const config::Config& config,
                         telemetry::Metrics& metrics)
    : schema_of_(std::move(schema_of)), metrics_(metrics) {
  set_servers(config.servers);
  metrics_.describe(std::string(kRepairsMetric), "counter",
                    "Changes repair made to tool calls, by server, tool and kind (tool_name, "
                    "param_name, param_alias, type_coerced, ...).");
  metrics_.describe(std::string(kInvalidMetric), "counter",
                    "Tool calls whose arguments did not match the tool's input schema after "
                    "repair, by server, tool and validate mode (warn: passed on; enforce: "
                    "answered with an isError result).");
}

boost::asio::awaitable<Result> RepairStage::handle(Call& call, call::Next next) {
  // Not a coroutine: a call with nothing to report costs no frame of its own.
  if (auto answer = prepare(call)) return call::ready(std::move(*answer));
  if (call.repairs.empty()) return next(call);
  return report(call, next);
}

boost::asio::awaitable<Result> RepairStage::report(Call& call, call::Next next) {
  Result result = co_await next(call);
  if (result.answered_by_server()) {
    result.response = with_repairs(result.response, repairs_json(call.repairs));
  }
  co_return result;
}

void RepairStage::set_servers(const std::vector<config::Server>& servers) {
  servers_.clear();
  for (const auto& s : servers) servers_.emplace(s.name, &s);
}

std::optional<Result> RepairStage::prepare(Call& call) {
  const std::optional<const ToolSchema*> tool = schema_of_(call.route.label);
  auto server = servers_.find(call.route.server);
  if (!tool || server == servers_.end()) return std::nullopt;
  config::RepairSettings settings = server->second->repair_for(call.route.tool);
  settings.repair = effective_mode(settings.repair, call);
  const ToolSchema* schema = *tool;
  const std::string_view raw = call.member("arguments");

  // One scan of the arguments' top-level members serves both checks below.
  std::optional<std::vector<json::Member>> members;
  if (raw.empty()) {
    members.emplace();
  } else if (raw.front() == '{') {
    members = json::object_members(raw);
  }
  const std::string_view object = raw.empty() ? std::string_view("{}") : raw;
  bool needed = false;
  if (settings.repair != config::RepairMode::kOff) {
    needed = !members || (schema && may_need_repair(object, *members, *schema, settings));
  }
  ArgumentRepair fixed;
  if (needed) fixed = repair_arguments(raw, schema, settings);
  if (fixed.arguments) {
    auto params = json::object_members(call.server_params());
    if (params) {
      call.upstream_params = json::rewrite_object(call.upstream_params, *params,
                                                  {{"arguments", *fixed.arguments}}, {});
      call.arguments_rewritten = true;
      for (auto& c : fixed.changes) {
        spdlog::debug("tools/call {} {}: {} {} '{}' -> '{}'", call.id, call.route.label, c.kind,
                      c.path, c.from, c.to);
        call.repairs.push_back(
            {std::string(c.kind), std::move(c.path), std::move(c.from), std::move(c.to)});
      }
    }
  }
  count_repairs(call);
  if (settings.validate == config::ValidateMode::kOff || !schema || !schema->compiled()) {
    return std::nullopt;
  }
  // Unchanged arguments that one scan proves valid need no DOM and no valijson.
  if (!fixed.arguments && fixed.problem.empty() && members &&
      schema->valid_by_scan(object, *members)) {
    return std::nullopt;
  }
  return validate(call, settings, *schema, raw, fixed.parsed, fixed.problem);
}

std::optional<Result> RepairStage::validate(Call& call, const config::RepairSettings& s,
                                            const ToolSchema& schema, std::string_view raw,
                                            const std::optional<bj::value>& parsed,
                                            const std::string& problem) {
  std::vector<Violation> violations;
  if (!problem.empty()) {
    violations.push_back({"", problem});
  } else if (parsed) {
    violations = schema.validate(*parsed);
  } else {
    boost::system::error_code ec;
    const bj::value args = raw.empty() ? bj::value(bj::object{}) : json::parse(raw, ec);
    if (ec || !args.is_object()) {
      violations.push_back({"", "arguments must be an object"});
    } else {
      violations = schema.validate(args);
    }
  }
  if (violations.empty()) return std::nullopt;
  const bool enforce = s.validate == config::ValidateMode::kEnforce;
  metrics_.add(std::string(kInvalidMetric),
               telemetry::labels({{"server", call.route.server},
                                  {"tool", call.route.label},
                                  {"mode", enforce ? "enforce" : "warn"}}));
  std::string text = "The arguments of '" + call.route.label + "' do not match its input schema" +
                     (enforce ? " (the tool was not run):" : ":");
  for (std::size_t i = 0; i < violations.size() && i < kMaxViolationsShown; ++i) {
    text += "\n" + describe(violations[i], schema);
  }
  if (violations.size() > kMaxViolationsShown) {
    text += "\n(" + std::to_string(violations.size() - kMaxViolationsShown) + " more)";
  }
  std::uint64_t& seen = invalid_calls_[call.route.label];
  ++seen;
  // The first few per tool in full, then one in a thousand: a model repeating its mistake does
  // not flood the log; the metric counts every one.
  if (seen <= 5 || seen % 1000 == 0) {
    spdlog::warn("tools/call {} (#{} invalid for this tool): {}", call.id, seen, text);
  }
  if (!enforce) return std::nullopt;
  text += "\nFix the arguments and call the tool again.";
  return tool_error(call, text);
}

void RepairStage::count_repairs(const Call& call) {
  for (const auto& r : call.repairs) {
    metrics_.add(std::string(kRepairsMetric), telemetry::labels({{"server", call.route.server},
                                                                 {"tool", call.route.label},
                                                                 {"kind", r.kind}}));
  }
}

}  // namespace toolbridge::repair
