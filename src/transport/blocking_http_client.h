#pragma once
// A small blocking HTTP/1.1 client (keep-alive, one connection) for the CLI's calls to a running
// gateway; on its way out (the CLI moves to HttpClient). SSE answers become their data payloads.
#include <optional>
#include <string>
#include <vector>

#include "transport/http_server.h"
#include "transport/url.h"

namespace toolbridge::transport {

struct BlockingResponse {
  int status = 0;
  std::string content_type;
  std::string body;                 // raw body (empty for SSE)
  std::vector<std::string> events;  // SSE data payloads, in order
  Headers headers;
  std::string header(std::string_view name) const;
};

class BlockingHttpClient {
 public:
  explicit BlockingHttpClient(Url url);
  ~BlockingHttpClient();
  // Returns false with `error` set when the exchange failed at the transport level.
  bool request(http::verb verb, const std::string& body, const Headers& headers,
               BlockingResponse& out, std::string& error);

 private:
  struct Impl;
  Url url_;
  Impl* impl_;
};

}  // namespace toolbridge::transport
