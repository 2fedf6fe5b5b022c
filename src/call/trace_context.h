#pragma once
// W3C Trace Context: the `traceparent` a caller's own tracing sends (HTTP header or
// params._meta.traceparent) is carried into the call trace and on to the server, so a run's
// spans and the gateway's records join up. Only the version-00 form is accepted:
// 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, lowercase, ids not all zero.
#include <string_view>

namespace toolbridge::call {

inline constexpr std::string_view kTraceparent = "traceparent";

bool valid_traceparent(std::string_view value);

}  // namespace toolbridge::call
