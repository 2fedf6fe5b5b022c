#include "repair/result_meta.h"

#include <boost/json.hpp>

#include "json/envelope.h"

namespace toolbridge::repair {

namespace bj = boost::json;

namespace {
constexpr std::string_view kRepairsKey = "toolbridge/repairs";
}

std::string repairs_json(const std::vector<gateway::CallRepair>& repairs) {
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
  const json::Envelope env = json::parse_envelope(response);
  if (env.kind != json::Kind::kResponse || env.result.empty()) return std::string(response);
  const std::string_view result = env.result.in(response);
  const auto members = json::object_members(result);
  if (!members) return std::string(response);
  std::string meta;
  std::string_view old_meta;
  for (const auto& m : *members) {
    if (m.name == "_meta") old_meta = m.value.in(result);
  }
  const auto meta_members = old_meta.empty() ? std::nullopt : json::object_members(old_meta);
  if (meta_members) {
    meta = json::rewrite_object(old_meta, *meta_members, {{kRepairsKey, std::string(repairs)}}, {});
  } else {
    // No _meta (or one that is not an object, which the spec does not allow): ours alone.
    meta = "{" + json::quote(kRepairsKey) + ":" + std::string(repairs) + "}";
  }
  const std::string new_result = json::rewrite_object(result, *members, {{"_meta", meta}}, {});
  std::string out;
  out.reserve(response.size() + new_result.size() - result.size());
  out.append(response.substr(0, env.result.offset));
  out.append(new_result);
  out.append(response.substr(env.result.offset + env.result.length));
  return out;
}

}  // namespace toolbridge::repair
