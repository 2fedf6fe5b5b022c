#include "frontend/param_headers.h"

#include <algorithm>
#include <boost/json.hpp>

namespace toolbridge::frontend {

namespace bj = boost::json;

namespace {

std::string_view trimmed(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

// The text a header must carry for an argument (before any Base64 wrapping).
std::optional<std::string> plain_value(const bj::value& v) {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_number() || v.is_bool()) return bj::serialize(v);
  return std::nullopt;
}

mcp::Rejection header_mismatch(const std::string& header, const std::string& param,
                               std::string why) {
  return mcp::Rejection{mcp::kHeaderMismatch,
                        header + " header " + std::move(why) + " (the tool marks parameter '" +
                            param + "' with x-mcp-header)",
                        {}};
}

}  // namespace

std::optional<mcp::Rejection> check_param_headers(const bj::object& arguments,
                                                  const HeaderParams& params,
                                                  const mcp::HeaderView& headers) {
  for (const auto& [param, suffix] : params) {
    const std::string header = "Mcp-Param-" + suffix;
    if (headers.count(header) > 1) return header_mismatch(header, param, "appears more than once");
    const auto given = headers.get(header);
    const bj::value* arg = arguments.if_contains(param);
    if (!arg || arg->is_null()) {
      if (given) return header_mismatch(header, param, "is set but the argument is absent");
      continue;
    }
    const auto want = plain_value(*arg);
    if (!want) continue;  // objects and arrays are not mirrored
    if (!given) return header_mismatch(header, param, "is missing while the argument is present");
    const auto decoded = mcp::decode_header_value(trimmed(*given));
    if (!decoded) return header_mismatch(header, param, "is not valid =?base64?...?= text");
    if (*decoded != *want)
      return header_mismatch(header, param, "does not match the argument's value");
  }
  return std::nullopt;
}

}  // namespace toolbridge::frontend
