#include "transport/url.h"

#include <boost/url/parse.hpp>

namespace toolbridge::transport {

namespace {
std::string bracketed(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}
}  // namespace

std::optional<Url> parse_url(const std::string& text, std::string& error) {
  auto parsed = boost::urls::parse_uri(text);
  if (!parsed) {
    error = "invalid URL '" + text + "': " + parsed.error().message();
    return std::nullopt;
  }
  Url u;
  u.tls = parsed->scheme() == "https";
  if (!u.tls && parsed->scheme() != "http") {
    error = "'" + text + "' is not http:// or https://";
    return std::nullopt;
  }
  u.host = std::string(parsed->host_address());
  if (u.host.size() > 2 && u.host.front() == '[') u.host = u.host.substr(1, u.host.size() - 2);
  if (u.host.empty()) {
    error = "invalid URL '" + text + "': no host";
    return std::nullopt;
  }
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
