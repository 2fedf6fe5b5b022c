#include "repair/answer.h"

#include <boost/json.hpp>

#include "json/envelope.h"

namespace toolbridge::repair {

namespace bj = boost::json;

call::Result tool_error(const call::Call& call, const std::string& text) {
  const bj::object body{{"content", bj::array{bj::object{{"type", "text"}, {"text", text}}}},
                        {"isError", true}};
  call::Result r;
  r.fault = call::Fault::kInvalidCall;
  r.response = json::make_result(call.id, bj::serialize(body));
  r.why = text;
  return r;
}

call::MetaKey request_meta_key() {
  return {kRepairMetaKey, [](call::Call& call, const boost::json::value& v) -> base::Status {
            const bool known = v.is_string() && (v.as_string() == "off" || v.as_string() == "safe" ||
                                                 v.as_string() == "aggressive");
            if (!known)
              return base::fail(
                  R"(_meta["toolbridge/repair"] must be "off", "safe" or "aggressive")");
            call.slots.get<Request>().mode = std::string(v.as_string());
            return {};
          }};
}

config::RepairMode effective_mode(config::RepairMode configured, const call::Call& call) {
  const Request* asked = call.slots.find<Request>();
  if (!asked) return configured;
  if (asked->mode == "off") return config::RepairMode::kOff;
  if (asked->mode == "safe" && configured == config::RepairMode::kAggressive)
    return config::RepairMode::kSafe;
  return configured;
}

}  // namespace toolbridge::repair
