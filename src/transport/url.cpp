#include "transport/url.h"

#include <boost/url/parse.hpp>

namespace toolbridge::transport {

namespace {
std::string bracketed(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}
}  // namespace

base::Expected<Url> parse_url(const std::string& text) {
  auto parsed = boost::urls::parse_uri(text);
  if (!parsed) return base::fail("invalid URL '" + text + "': " + parsed.error().message());
  Url u;
  u.tls = parsed->scheme() == "https";
  if (!u.tls && parsed->scheme() != "http")
    return base::fail("'" + text + "' is not http:// or https://");
  u.host = std::string(parsed->host_address());
  if (u.host.size() > 2 && u.host.front() == '[') u.host = u.host.substr(1, u.host.size() - 2);
  if (u.host.empty()) return base::fail("invalid URL '" + text + "': no host");
  const std::string default_port = u.tls ? "443" : "80";
  u.port =
      parsed->has_port() && !parsed->port().empty() ? std::string(parsed->port()) : default_port;
  u.target = std::string(parsed->encoded_target());
  if (u.target.empty()) u.target = "/";
  return u;
}

std::string Url::origin() const {
  return (tls ? "https://" : "http://") + bracketed(host) + ":" + port;
}

std::string Url::text() const {
  return origin() + target;
}

std::string host_header(const Url& url) {
  std::string h = bracketed(url.host);
  if (url.port != (url.tls ? "443" : "80")) h += ":" + url.port;
  return h;
}

}  // namespace toolbridge::transport
