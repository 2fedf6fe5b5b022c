#include "repair/result_meta.h"

#include <boost/json.hpp>

#include "json/nested_meta.h"

namespace toolbridge::repair {

namespace bj = boost::json;

namespace {
constexpr std::string_view kRepairsKey = "toolbridge/repairs";
}

std::string repairs_json(const std::vector<call::CallRepair>& repairs) {
  bj::array out;
  for (const auto& r : repairs) {
    bj::object o{{"kind", r.kind}};
    if (!r.path.empty()) o["path"] = r.path;
    o["from"] = r.from;
    o["to"] = r.to;
    out.push_back(std::move(o));
  }
  return bj::serialize(out);
}

std::string with_repairs(std::string_view response, std::string_view repairs) {
  return json::with_result_meta(response, kRepairsKey, repairs);
}

}  // namespace toolbridge::repair
