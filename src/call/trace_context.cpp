#include "call/trace_context.h"

#include <algorithm>

namespace toolbridge::call {

namespace {

bool lower_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool all_zero(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; });
}

}  // namespace

bool valid_traceparent(std::string_view v) {
  // 2 + 1 + 32 + 1 + 16 + 1 + 2
  if (v.size() != 55 || v[2] != '-' || v[35] != '-' || v[52] != '-') return false;
  const std::string_view version = v.substr(0, 2), trace_id = v.substr(3, 32),
                         parent_id = v.substr(36, 16), flags = v.substr(53, 2);
  return version == "00" && lower_hex(trace_id) && lower_hex(parent_id) && lower_hex(flags) &&
         !all_zero(trace_id) && !all_zero(parent_id);
}

}  // namespace toolbridge::call
