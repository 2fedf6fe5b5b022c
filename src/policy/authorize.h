#pragma once
// The authorize stage: a call whose API key has an allowlist reaches only the servers and tools
// it names (right after resolve, so the check sees the server and the exposed tool name). Calls
// without a key, or with a key that allows everything, step over it.
#include <functional>
#include <string>
#include <string_view>

#include "call/stage.h"
#include "config/config.h"

namespace toolbridge::policy {

// Whether `key` may use `exposed` (a tool's or prompt's exposed name, "server__tool") of
// `server`. A null key (no authentication) or an empty allowlist allows everything.
bool allows(const config::ApiKey* key, std::string_view server, std::string_view exposed);
// The message of a call the key may not make.
std::string forbidden_message(const config::ApiKey& key, std::string_view display_name);

// `tools_json` (`{"tools":[...]}`) with only the tools `key` may call; `server_of` names the
// server of an exposed tool name.
std::string allowed_tools_json(const std::string& tools_json, const config::ApiKey& key,
                               const std::function<std::string(std::string_view)>& server_of);

class AuthorizeStage final : public call::Stage {
 public:
  std::string_view name() const override { return "authorize"; }
  bool applies(const call::Call& call) const override {
    return call.principal && !call.principal->allow.empty();
  }
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next next) override;
};

}  // namespace toolbridge::policy
