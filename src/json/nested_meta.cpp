#include "json/nested_meta.h"

#include "json/envelope.h"

namespace toolbridge::json {

namespace {

// `object` (raw JSON) with `key` set to `value` in its member `field`, an object made if absent;
// nullopt if `object` or its `field` is not an object.
std::optional<std::string> with_nested(std::string_view object, std::string_view field,
                                       std::string_view key, std::string_view value) {
  const auto members = object_members(object);
  if (!members) return std::nullopt;
  std::string_view old;
  for (const auto& m : *members) {
    if (m.name == field) old = m.value.in(object);
  }
  std::string inner;
  if (old.empty()) {
    inner = "{" + quote(key) + ":" + std::string(value) + "}";
  } else {
    const auto inner_members = object_members(old);
    if (!inner_members) return std::nullopt;
    inner = rewrite_object(old, *inner_members, {{key, std::string(value)}}, {});
  }
  return rewrite_object(object, *members, {{field, std::move(inner)}}, {});
}

// `response` with the span `at` replaced by `replacement`.
std::string splice(std::string_view response, Span at, std::string_view replacement) {
  std::string out;
  out.reserve(response.size() + replacement.size() - at.length);
  out.append(response.substr(0, at.offset));
  out.append(replacement);
  out.append(response.substr(at.offset + at.length));
  return out;
}

}  // namespace

std::string with_result_meta(std::string_view response, std::string_view key,
                             std::string_view value) {
  const Envelope env = parse_envelope(response);
  if (env.kind != Kind::kResponse || env.result.empty()) return std::string(response);
  const auto result = with_nested(env.result.in(response), "_meta", key, value);
  return result ? splice(response, env.result, *result) : std::string(response);
}

std::string with_response_meta(std::string_view response, std::string_view key,
                               std::string_view value) {
  const Envelope env = parse_envelope(response);
  if (env.kind != Kind::kResponse) return std::string(response);
  if (!env.result.empty()) return with_result_meta(response, key, value);
  if (env.error.empty()) return std::string(response);
  const auto error = with_nested(env.error.in(response), "data", key, value);
  return error ? splice(response, env.error, *error) : std::string(response);
}

}  // namespace toolbridge::json
