#include "repair/answer.h"

#include <boost/json.hpp>

#include "json/envelope.h"

namespace toolbridge::repair {

namespace bj = boost::json;

gateway::Result tool_error(const gateway::Call& call, const std::string& text) {
  const bj::object body{{"content", bj::array{bj::object{{"type", "text"}, {"text", text}}}},
                        {"isError", true}};
  gateway::Result r;
  r.fault = gateway::Fault::kInvalidCall;
  r.response = json::make_result(call.id, bj::serialize(body));
  r.why = text;
  return r;
}

config::RepairMode effective_mode(config::RepairMode configured, const gateway::Call& call) {
  if (call.repair_request == "off") return config::RepairMode::kOff;
  if (call.repair_request == "safe" && configured == config::RepairMode::kAggressive)
    return config::RepairMode::kSafe;
  return configured;
}

}  // namespace toolbridge::repair
