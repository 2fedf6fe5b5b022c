#include "policy/authorize.h"

#include <fmt/format.h>

#include <boost/json.hpp>

namespace toolbridge::policy {

bool allows(const config::ApiKey* key, std::string_view server, std::string_view exposed) {
  if (!key || key->allow.empty()) return true;
  for (const auto& a : key->allow) {
    if (a == server || (!exposed.empty() && a == exposed)) return true;
  }
  return false;
}

std::string forbidden_message(const config::ApiKey& key, std::string_view display_name) {
  std::string list;
  for (const auto& a : key.allow) list += (list.empty() ? "" : ", ") + a;
  return fmt::format("{} is not allowed for API key '{}' (it may use: {})", display_name, key.name,
                     list);
}

std::string allowed_tools_json(const std::string& tools_json, const config::ApiKey& key,
                               const std::function<std::string(std::string_view)>& server_of) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(tools_json, ec);
  if (ec || !v.is_object()) return R"({"tools":[]})";
  auto* tools = v.as_object().if_contains("tools");
  if (!tools || !tools->is_array()) return R"({"tools":[]})";
  boost::json::array kept;
  for (auto& t : tools->as_array()) {
    const auto* name = t.is_object() ? t.as_object().if_contains("name") : nullptr;
    if (!name || !name->is_string()) continue;
    const std::string_view exposed = name->as_string();
    if (allows(&key, server_of(exposed), exposed)) kept.push_back(std::move(t));
  }
  *tools = std::move(kept);
  return boost::json::serialize(v);
}

boost::asio::awaitable<call::Result> AuthorizeStage::handle(call::Call& call, call::Next next) {
  // Not a coroutine: an allowed call costs no frame here.
  const std::string& exposed = call.route.label;
  if (allows(call.principal, call.route.server, exposed)) return next(call);
  return call::ready(call::Result::failure(
      call::Fault::kForbidden, forbidden_message(*call.principal, call.route.display_name)));
}

}  // namespace toolbridge::policy
