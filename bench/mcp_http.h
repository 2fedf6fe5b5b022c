#pragma once
// The load generator's side of MCP Streamable HTTP: one keep-alive TCP connection carrying one
// MCP session, on Beast, every wait bounded. Responses may be application/json or an SSE stream;
// the JSON-RPC response is picked out of the latter's `data:` lines.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace toolbridge::bench {

struct HttpResult {
  int status = 0;
  std::string content_type;
  std::string body;
  std::string session_id;  // Mcp-Session-Id of the response
  bool keep_alive = true;
  std::string error;  // transport failure; empty when an HTTP response arrived
};

// GET with its own io_context, for readiness checks.
HttpResult http_get(const std::string& host, unsigned short port, const std::string& target,
                    std::chrono::milliseconds timeout);

// The JSON-RPC response with id `id` (raw JSON) in an HTTP answer: the body itself, or the
// matching `data:` event of an SSE stream. Empty if there is none.
std::string_view find_response(const HttpResult& res, std::string_view id);

// Checks a tools/call response: a result, not an error, not isError, and a result of at least
// `min_result_bytes`. Returns an empty string when it is fine, else what is wrong.
std::string check_tool_response(std::string_view message, std::string_view id,
                                std::size_t min_result_bytes);

class McpHttpSession {
 public:
  McpHttpSession(boost::asio::any_io_executor ex, std::string host, unsigned short port,
                 std::chrono::milliseconds timeout);

  // TCP connect (TCP_NODELAY), initialize, notifications/initialized. Error text or empty.
  boost::asio::awaitable<std::string> open();
  // One tools/call; error text or empty.
  boost::asio::awaitable<std::string> call_tool(std::string_view name,
                                                std::string_view arguments_json,
                                                std::size_t min_result_bytes);
  // One tools/call whose JSON-RPC response is kept in `response`; error text or empty.
  boost::asio::awaitable<std::string> call_tool_response(std::string_view name,
                                                         std::string_view arguments_json,
                                                         std::string& response);
  // POST `body` to `target` (e.g. /v1/batch) on this connection, outside the MCP session.
  boost::asio::awaitable<HttpResult> post(std::string_view target, std::string body);
  // DELETE the session (best effort) and close the connection.
  boost::asio::awaitable<void> close();

  // The tenant (a run) the session belongs to: sent as X-Toolbridge-Tenant with every request.
  void set_tenant(std::string tenant) { tenant_ = std::move(tenant); }

  // How many times the gateway closed a keep-alive connection under us (we reconnect).
  std::uint64_t reconnects() const { return reconnects_; }

 private:
  boost::asio::awaitable<std::string> connect();
  boost::asio::awaitable<HttpResult> exchange(boost::beast::http::verb verb, std::string body,
                                              std::string_view target = "/mcp");

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::string host_;
  unsigned short port_;
  std::string host_header_;
  std::chrono::milliseconds timeout_;
  bool connected_ = false;
  std::string session_;
  std::string protocol_version_;
  std::string tenant_;
  std::uint64_t next_id_ = 1;
  std::uint64_t reconnects_ = 0;
};

}  // namespace toolbridge::bench
