#include "frontend/origin_guard.h"

#include <boost/beast/core/string.hpp>
#include <boost/url/ipv6_address.hpp>

#include "transport/local_origin.h"

namespace toolbridge::frontend {

namespace http = boost::beast::http;

namespace {

// Header values are the client's bytes: an error message shows at most this many of them.
constexpr std::size_t kShownBytes = 64;

// `value` in quotes for a message: cut to kShownBytes, bytes outside printable ASCII as \xNN.
std::string quoted(std::string_view value) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (const char c : value.substr(0, kShownBytes)) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7f && c != '\\') {
      out += c;
    } else {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 0xf];
    }
  }
  out += '\'';
  if (value.size() > kShownBytes) out += " (cut, " + std::to_string(value.size()) + " bytes)";
  return out;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// RFC 3986 allows an empty port and any number of digits; a browser sends neither.
bool valid_port(std::string_view port) {
  if (port.empty() || port.size() > 5) return false;
  unsigned value = 0;
  for (const char c : port) {
    if (!is_digit(c)) return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return value <= 65535;
}

// A reg-name or IPv4 address (RFC 3986): unreserved and sub-delims characters, %XX escapes.
bool valid_name(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (is_alpha(c) || is_digit(c)) continue;
    if (std::string_view("-._~!$&'()*+,;=").find(c) != std::string_view::npos) continue;
    if (c == '%' && i + 2 < name.size() && is_hex(name[i + 1]) && is_hex(name[i + 2])) {
      i += 2;
      continue;
    }
    return false;
  }
  return true;
}

// What makes `authority` other than host[:port] (no userinfo), in words; empty if nothing.
std::string_view authority_fault(std::string_view authority) {
  if (authority.empty()) return "it is empty";
  if (authority.find('@') != std::string_view::npos) return "it has userinfo ('@')";
  std::string_view host = authority;
  std::string_view port;
  bool has_port = false;
  if (authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return "its '[' is not closed";
    host = authority.substr(0, close + 1);
    const std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return "something other than :port follows ']'";
    // IPv6 only: no zone identifier and no IPvFuture, which no browser sends.
    if (!boost::urls::parse_ipv6_address(host.substr(1, host.size() - 2)))
      return "the host in brackets is not an IPv6 address";
    has_port = !rest.empty();
    if (has_port) port = rest.substr(1);
  } else {
    const std::size_t colon = authority.find(':');
    if (colon != std::string_view::npos) {
      if (authority.find(':', colon + 1) != std::string_view::npos)
        return "it has more than one ':' (an IPv6 address goes in brackets)";
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
      has_port = true;
    }
    if (host.empty()) return "the host is empty";
    if (!valid_name(host)) return "the host is not a name or an IP address";
  }
  if (has_port && port.empty()) return "the port after ':' is empty";
  if (has_port && !valid_port(port)) return "the port is not a number from 0 to 65535";
  return {};
}

// What makes `origin` other than a serialized origin, scheme://host[:port]; empty if nothing.
std::string_view origin_fault(std::string_view origin) {
  if (origin.empty()) return "it is empty";
  if (origin.find(' ') != std::string_view::npos)
    return "it holds a space (a list, not one origin)";
  const std::size_t sep = origin.find("://");
  if (sep == std::string_view::npos) return "it has no scheme://";
  const std::string_view scheme = origin.substr(0, sep);
  if (scheme.empty() || !is_alpha(scheme.front())) return "its scheme is not one";
  for (const char c : scheme) {
    if (!is_alpha(c) && !is_digit(c) && c != '+' && c != '-' && c != '.')
      return "its scheme is not one";
  }
  const std::string_view authority = origin.substr(sep + 3);
  const std::size_t end = authority.find_first_of("/?#");
  if (end != std::string_view::npos) {
    if (authority[end] == '/') return "it has a path (even '/' is one)";
    if (authority[end] == '?') return "it has a query";
    return "it has a fragment";
  }
  return authority_fault(authority);
}

HeadRefusal bad_request(std::string message) {
  return HeadRefusal{http::status::bad_request, "Bad Request: " + std::move(message)};
}

HeadRefusal forbidden(std::string message) {
  return HeadRefusal{http::status::forbidden, "Forbidden: " + std::move(message)};
}

}  // namespace

OriginGuard::OriginGuard(std::string_view listen_host, std::vector<std::string> allowed_origins)
    : loopback_(transport::is_loopback_address(listen_host)),
      allowed_origins_(std::move(allowed_origins)) {
  for (const auto& origin : allowed_origins_) {
    const std::size_t sep = origin.find("://");
    if (sep != std::string::npos) allowed_hosts_.push_back(origin.substr(sep + 3));
  }
}

bool OriginGuard::origin_allowed(std::string_view origin) const {
  for (const auto& allowed : allowed_origins_) {
    if (boost::beast::iequals(origin, allowed)) return true;
  }
  return transport::is_loopback_origin(origin);
}

bool OriginGuard::host_allowed(std::string_view host) const {
  if (transport::is_loopback_host(host)) return true;
  for (const auto& allowed : allowed_hosts_) {
    if (boost::beast::iequals(host, allowed)) return true;
  }
  return false;
}

std::optional<HeadRefusal> OriginGuard::check(const transport::Request& req) const {
  // Fields are matched by Beast's enum, set case-insensitively when the head was parsed.
  std::string_view host, origin;
  std::size_t hosts = 0, origins = 0;
  for (const auto& field : req) {
    if (field.name() == http::field::host) {
      if (hosts++ == 0) host = {field.value().data(), field.value().size()};
    } else if (field.name() == http::field::origin) {
      if (origins++ == 0) origin = {field.value().data(), field.value().size()};
    }
  }
  if (hosts > 1) {
    return bad_request(std::to_string(hosts) +
                       " Host headers; a request names one host (RFC 9112 section 3.2)");
  }
  if (origins > 1) {
    return bad_request(std::to_string(origins) +
                       " Origin headers; a browser sends at most one (RFC 6454)");
  }
  if (hosts == 0) {
    if (req.version() >= 11) return bad_request("an HTTP/1.1 request needs a Host header");
  } else if (const std::string_view fault = authority_fault(host); !fault.empty()) {
    return bad_request("Host " + quoted(host) + " is not host[:port]: " + std::string(fault));
  }
  if (origins == 1) {
    // Browsers send "null" for opaque origins (sandboxed frames, file: pages, data: URLs,
    // cross-origin redirects); no allowed origin can name one, so it is never allowed.
    if (origin == "null") {
      return forbidden(
          "Origin 'null' (an opaque origin: a sandboxed or file: page, or a redirect) is never "
          "allowed (gateway.allowed_origins)");
    }
    if (const std::string_view fault = origin_fault(origin); !fault.empty()) {
      return bad_request(
          "Origin " + quoted(origin) +
          " is not a serialized origin, scheme://host[:port] (RFC 6454): " + std::string(fault));
    }
    if (!origin_allowed(origin)) {
      return forbidden("Origin " + quoted(origin) + " is not allowed (gateway.allowed_origins)");
    }
  }
  // DNS rebinding sends the attacker's name as Host.
  if (loopback_ && hosts == 1 && !host_allowed(host)) {
    return forbidden("Host " + quoted(host) +
                     " is not a loopback name nor the host of an allowed origin "
                     "(gateway.allowed_origins)");
  }
  return std::nullopt;
}

}  // namespace toolbridge::frontend
