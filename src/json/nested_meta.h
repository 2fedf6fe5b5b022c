#pragma once
// A gateway key added to a JSON-RPC response without re-serialising its payload: result._meta
// (a result) or error.data (an error), spliced with object_members / rewrite_object. Used for
// _meta["toolbridge/repairs"] and _meta["toolbridge/fault"].
#include <string>
#include <string_view>

namespace toolbridge::json {

// `response` with `key` set to raw JSON `value` in result._meta (created if absent). An error
// response, or a result (or _meta) that is not an object, comes back as is.
std::string with_result_meta(std::string_view response, std::string_view key,
                             std::string_view value);

// `response` with `key` set in result._meta for a result, or in error.data for an error (created
// if absent; left as is if the error's data is not an object).
std::string with_response_meta(std::string_view response, std::string_view key,
                               std::string_view value);

}  // namespace toolbridge::json
