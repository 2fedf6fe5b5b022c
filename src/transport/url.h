#pragma once
// An http:// or https:// URL split into what a client needs: the origin (scheme, host, port)
// that picks a connection pool, and the target (path and query) that goes in the request line.
#include <string>

#include "base/expected.h"

namespace toolbridge::transport {

struct Url {
  bool tls = false;    // https
  std::string host;    // without brackets for IPv6
  std::string port;    // always set ("80"/"443" when the URL has none)
  std::string target;  // path and query, "/" at least

  // "http://host:port": the key of a connection pool.
  std::string origin() const;
  // The URL written out again (scheme, host, explicit port, target).
  std::string text() const;
};

// Parses `text`; why not ("invalid URL '...': ...") when it is not an http:// or https:// URL.
base::Expected<Url> parse_url(const std::string& text);

// The Host header value for `url`: IPv6 addresses in brackets, the port left out when it is the
// scheme's default.
std::string host_header(const Url& url);

}  // namespace toolbridge::transport
