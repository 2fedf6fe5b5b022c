#pragma once
// DNS-rebinding defence, in front of every route of a listener: a browser page on another origin
// must not drive local tools, and a loopback listener answers only to loopback names (and the
// allowed origins' hosts) in Host. The head is judged as a browser could have sent it: exactly
// one Host that is host[:port], at most one Origin that is a serialized origin (RFC 6454).
// Anything else is malformed (400) rather than read by its first safe-looking header.
#include <boost/beast/http/status.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "transport/http_server.h"

namespace toolbridge::frontend {

struct HeadRefusal {
  boost::beast::http::status status;  // bad_request: a malformed head; forbidden: by policy
  std::string message;                // header values in it are cut to 64 bytes, escaped
};

class OriginGuard {
 public:
  // `listen_host`: the listener's own address (Host is checked when it is loopback);
  // `allowed_origins`: gateway.allowed_origins (validated origins, `http(s)://host[:port]`).
  OriginGuard(std::string_view listen_host, std::vector<std::string> allowed_origins);

  // Nothing if the request may go on, else its answer. One scan of the header fields; on the
  // common path (one loopback Host, no Origin) nothing is allocated.
  std::optional<HeadRefusal> check(const transport::Request& req) const;

 private:
  bool origin_allowed(std::string_view origin) const;
  bool host_allowed(std::string_view host) const;

  bool loopback_;
  std::vector<std::string> allowed_origins_;
  std::vector<std::string> allowed_hosts_;  // host[:port] of each allowed origin
};

}  // namespace toolbridge::frontend
