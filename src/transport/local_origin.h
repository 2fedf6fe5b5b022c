#pragma once
// DNS-rebinding defence for servers bound to loopback: a browser page whose name resolves to
// 127.0.0.1 still sends its own name in Host and Origin, so both must name this machine.
#include <string_view>

namespace toolbridge::transport {

// `localhost`, `127.0.0.1` or `[::1]`, with or without `:port` (a Host header value).
bool is_loopback_host(std::string_view host);
// `http(s)://` + a loopback host (an Origin header value).
bool is_loopback_origin(std::string_view origin);
// Is `address` (a listen address such as 127.0.0.1, ::1, [::1], localhost) a loopback one?
bool is_loopback_address(std::string_view address);

}  // namespace toolbridge::transport
