#include "mcp/revision.h"

#include <boost/beast/core/detail/base64.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "json/envelope.h"

namespace toolbridge::mcp {

namespace bj = boost::json;
namespace b64 = boost::beast::detail::base64;

namespace {

constexpr std::string_view kRoutingHeaders[] = {"MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"};

// The params member a name-bearing method mirrors in Mcp-Name.
std::string_view name_key(std::string_view method) {
  if (method == "tools/call" || method == "prompts/get") return "name";
  if (method == "resources/read") return "uri";
  // The tasks extension (SEP-2663) routes its methods by task id.
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel") return "taskId";
  return {};
}

Rejection mismatch(std::string_view what) {
  return {kHeaderMismatch, std::string(what), {}};
}

}  // namespace

bool is_stateless_version(std::string_view v) {
  return v == kStatelessVersion;
}

std::string all_versions_json() {
  return R"(["2025-03-26","2025-06-18","2025-11-25","2026-07-28"])";
}

std::optional<std::string> decode_header_value(std::string_view value) {
  constexpr std::string_view open = "=?base64?", close = "?=";
  if (!(value.size() >= open.size() + close.size() && value.starts_with(open) &&
        value.ends_with(close))) {
    return std::string(value);
  }
  const std::string_view payload = value.substr(open.size(), value.size() - 11);
  std::string out(b64::decoded_size(payload.size()), '\0');
  const auto [written, read] = b64::decode(out.data(), payload.data(), payload.size());
  // `read` leaves out the padding.
  const std::size_t padding = payload.ends_with("==") ? 2 : payload.ends_with("=") ? 1 : 0;
  if (read != payload.size() - padding) return std::nullopt;
  out.resize(written);
  // Only the canonical encoding counts, so two texts never name the same value.
  std::string again(b64::encoded_size(out.size()), '\0');
  again.resize(b64::encode(again.data(), out.data(), out.size()));
  if (again != payload) return std::nullopt;
  return out;
}

std::optional<Rejection> classify(const bj::object& request, const HeaderView& headers,
                                  StatelessEnvelope& out) {
  for (std::string_view h : kRoutingHeaders) {
    if (headers.count(h) > 1) return mismatch(std::string(h) + " header appears more than once");
  }
  const bj::value* params = request.if_contains("params");
  const bj::value* meta =
      params && params->is_object() ? params->as_object().if_contains("_meta") : nullptr;
  if (!meta || !meta->is_object()) {
    return Rejection{json::kInvalidParams,
                     "params._meta must be an object carrying the required '" +
                         std::string(kVersionMeta) + "' and '" + std::string(kCapabilitiesMeta) +
                         "' envelope keys",
                     {}};
  }
  const bj::object& m = meta->as_object();
  std::string missing;
  for (std::string_view key : {kVersionMeta, kCapabilitiesMeta}) {
    if (!m.contains(key)) missing += (missing.empty() ? "" : ", ") + std::string(key);
  }
  if (!missing.empty()) {
    return Rejection{json::kInvalidParams,
                     "params._meta is missing the required envelope key(s): " + missing,
                     {}};
  }
  const bj::value& version = m.at(kVersionMeta);
  const auto header_version = headers.get("MCP-Protocol-Version");
  if (!header_version || !version.is_string() || *header_version != version.as_string()) {
    return mismatch(
        "MCP-Protocol-Version header does not match the request envelope's protocol version");
  }
  const bj::value* method = request.if_contains("method");
  const std::string_view method_name =
      method && method->is_string() ? std::string_view(method->as_string()) : std::string_view();
  if (headers.get("Mcp-Method") != std::optional<std::string_view>(method_name)) {
    return mismatch("Mcp-Method header does not match the request body's method");
  }
  if (const std::string_view key = name_key(method_name); !key.empty()) {
    const bj::value* named = params->as_object().if_contains(key);
    if (named && !named->is_null()) {
      const auto header_name = headers.get("Mcp-Name");
      const auto decoded = header_name ? decode_header_value(*header_name) : std::nullopt;
      if (!named->is_string() || !decoded || *decoded != named->as_string()) {
        return mismatch("Mcp-Name header does not match the request body's '" + std::string(key) +
                        "' parameter");
      }
    }
  }
  out.version = std::string(version.as_string());
  if (!is_stateless_version(out.version)) {
    const std::string data = R"({"supported":[")" + std::string(kStatelessVersion) +
                             R"("],"requested":)" + json::quote(out.version) + "}";
    return Rejection{kUnsupportedProtocolVersion, "Unsupported protocol version", data};
  }
  if (const bj::value& caps = m.at(kCapabilitiesMeta); caps.is_object()) {
    out.capabilities = caps.as_object();
    out.sampling = out.capabilities.contains("sampling");
    out.elicitation = out.capabilities.contains("elicitation");
    out.roots = out.capabilities.contains("roots");
  }
  if (const bj::value* level = m.if_contains(kLogLevelMeta); level && level->is_string()) {
    out.log_level = std::string(level->as_string());
  }
  return std::nullopt;
}

int http_status_for(int code) {
  switch (code) {
    case json::kParseError:
    case json::kInvalidRequest:
    case json::kInvalidParams:
    case kHeaderMismatch:
    case kMissingClientCapability:
    case kUnsupportedProtocolVersion:
      return 400;
    case json::kMethodNotFound:
      return 404;
    default:
      return 200;
  }
}

}  // namespace toolbridge::mcp
