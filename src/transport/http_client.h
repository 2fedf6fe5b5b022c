#pragma once
// A small blocking HTTP/1.1 client (keep-alive, one connection) for the CLI's calls to a running
// gateway. Server-Sent Event answers are collected into their `data:` payloads.
#include <optional>
#include <string>
#include <vector>

#include "transport/http_server.h"

namespace toolbridge::transport {

struct Url {
  std::string host;
  std::string port;
  std::string target;  // path and query
};
std::optional<Url> parse_url(const std::string& text, std::string& error);
// The Host header value for `url` (IPv6 addresses in brackets, as the gateway's checks expect).
std::string host_header(const Url& url);

struct HttpResponse {
  int status = 0;
  std::string content_type;
  std::string body;                  // raw body (empty for SSE)
  std::vector<std::string> events;   // SSE data payloads, in order
  Headers headers;
  std::string header(std::string_view name) const;
};

class HttpClient {
 public:
  explicit HttpClient(Url url);
  ~HttpClient();
  // Returns false with `error` set when the exchange failed at the transport level.
  bool request(http::verb verb, const std::string& body, const Headers& headers, HttpResponse& out,
               std::string& error);

 private:
  struct Impl;
  Url url_;
  Impl* impl_;
};

}  // namespace toolbridge::transport
