// libFuzzer target: request heads to the DNS-rebinding guard (src/frontend/origin_guard.h). The
// bytes are header lines, read twice: by Beast's parser (as the listener reads them) and as
// raw name:value pairs (bytes no parser would pass). Whatever a guard lets through has one Host
// (none only on HTTP/1.0) that is host[:port] and at most one Origin that is scheme://host[:port],
// judged here by a separate reading of RFC 3986 and 6454; on a loopback listener both name this
// machine. A refusal is 400 or 403 with a short printable message.
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "frontend/origin_guard.h"

namespace {

namespace http = boost::beast::http;
using toolbridge::frontend::OriginGuard;
using toolbridge::transport::Request;

void require(bool ok) {
  if (!ok) std::abort();
}

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

bool digits_at_most_65535(std::string_view s) {
  if (s.empty() || s.size() > 5) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return std::stoul(std::string(s)) <= 65535;
}

// host[:port]: a non-empty host with no userinfo, path, query, fragment or space; an IPv6
// address in brackets; a port of digits.
bool is_authority(std::string_view a) {
  if (a.empty() || a.find_first_of("@/?# \t\r\n") != std::string_view::npos) return false;
  std::string_view port;
  if (a.front() == '[') {
    const auto close = a.find(']');
    if (close == std::string_view::npos || close < 3) return false;
    if (close + 1 < a.size()) {
      if (a[close + 1] != ':') return false;
      port = a.substr(close + 2);
      if (!digits_at_most_65535(port)) return false;
    }
    return true;
  }
  const auto colon = a.find(':');
  if (colon == 0) return false;
  return colon == std::string_view::npos || digits_at_most_65535(a.substr(colon + 1));
}

bool is_serialized_origin(std::string_view o) {
  const auto sep = o.find("://");
  if (sep == std::string_view::npos || sep == 0) return false;
  for (char c : o.substr(0, sep)) {
    const char l = lower(c);
    if (!((l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '+' || l == '-' || l == '.'))
      return false;
  }
  return is_authority(o.substr(sep + 3));
}

bool names_this_machine(std::string_view authority) {
  for (std::string_view name : {"localhost", "127.0.0.1", "[::1]"}) {
    if (authority.size() >= name.size() && same_name(authority.substr(0, name.size()), name) &&
        (authority.size() == name.size() || authority[name.size()] == ':'))
      return true;
  }
  return false;
}

void judge(const OriginGuard& guard, bool loopback, const Request& req) {
  const auto refusal = guard.check(req);
  if (refusal) {
    require(refusal->status == http::status::bad_request ||
            refusal->status == http::status::forbidden);
    require(refusal->message.size() < 512);
    for (char c : refusal->message) require(c >= 0x20 && c < 0x7f);
    return;
  }
  std::size_t hosts = 0, origins = 0;
  std::string_view host, origin;
  for (const auto& field : req) {
    const std::string_view name(field.name_string().data(), field.name_string().size());
    const std::string_view value(field.value().data(), field.value().size());
    if (same_name(name, "Host")) ++hosts, host = value;
    if (same_name(name, "Origin")) ++origins, origin = value;
  }
  require(hosts == 1 || (hosts == 0 && req.version() < 11));
  require(origins <= 1);
  if (hosts == 1) require(is_authority(host));
  if (origins == 1) require(is_serialized_origin(origin));
  if (loopback) {
    if (hosts == 1) require(names_this_machine(host));
    if (origins == 1) {
      const auto sep = origin.find("://");
      const std::string_view scheme = origin.substr(0, sep);
      require(same_name(scheme, "http") || same_name(scheme, "https"));
      require(names_this_machine(origin.substr(sep + 3)));
    }
  }
}

void judge_all(const Request& req) {
  static const OriginGuard loopback("127.0.0.1", {});
  static const OriginGuard open("0.0.0.0", {"https://app.example"});
  judge(loopback, true, req);
  judge(open, false, req);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view lines(reinterpret_cast<const char*>(data), size);
  // As the listener reads it: a request line (HTTP/1.0 if the first byte is '0', which is then
  // dropped), the bytes as its header, an empty line.
  {
    const std::string version = !lines.empty() && lines.front() == '0' ? "1.0" : "1.1";
    std::string head = "GET /mcp HTTP/" + version + "\r\n";
    head.append(lines.substr(lines.empty() || lines.front() != '0' ? 0 : 1));
    head += "\r\n\r\n";
    http::request_parser<http::string_body> parser;
    boost::beast::error_code ec;
    parser.put(boost::asio::buffer(head), ec);
    if (!ec && parser.is_done()) judge_all(parser.get());
  }
  // As raw fields: one per '\n', name before the first ':', value after it and its spaces,
  // without a final '\r' (any other bytes stay).
  {
    Request req;
    req.version(11);
    std::string_view rest = lines;
    while (!rest.empty()) {
      const auto end = rest.find('\n');
      const std::string_view line = rest.substr(0, end);
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
      const auto colon = line.find(':');
      if (colon == std::string_view::npos || colon == 0) continue;
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
        value.remove_prefix(1);
      if (!value.empty() && value.back() == '\r') value.remove_suffix(1);
      req.insert(line.substr(0, colon), value);
    }
    judge_all(req);
  }
  return 0;
}
