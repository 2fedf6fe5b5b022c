#include "mcp_http.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>
#include <limits>

#include "json/envelope.h"

namespace toolbridge::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace bj = boost::json;
using tcp = asio::ip::tcp;

namespace {

constexpr const char* kProtocolVersion = "2025-11-25";

// Reads one response into `out`; `out.error` is set on a transport failure.
asio::awaitable<void> read_response(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                    HttpResult& out) {
  http::response_parser<http::string_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  boost::system::error_code ec;
  co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    out.error = "reading the HTTP response: " + ec.message();
    co_return;
  }
  auto& res = parser.get();
  out.status = static_cast<int>(res.result_int());
  out.content_type = std::string(res[http::field::content_type]);
  out.session_id = std::string(res["Mcp-Session-Id"]);
  out.keep_alive = res.keep_alive();
  out.body = std::move(res.body());
}

std::string excerpt(std::string_view text) {
  return std::string(text.substr(0, 300)) + (text.size() > 300 ? "…" : "");
}

}  // namespace

HttpResult http_get(const std::string& host, unsigned short port, const std::string& target,
                    std::chrono::milliseconds timeout) {
  asio::io_context io;
  HttpResult result;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        beast::tcp_stream stream(io);
        stream.expires_after(timeout);
        boost::system::error_code ec;
        const auto address = asio::ip::make_address(host, ec);
        if (ec) {
          result.error = "bad address '" + host + "': " + ec.message();
          co_return;
        }
        co_await stream.async_connect(tcp::endpoint(address, port),
                                      asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
          result.error = "connect: " + ec.message();
          co_return;
        }
        http::request<http::empty_body> req{http::verb::get, target, 11};
        req.set(http::field::host, host + ":" + std::to_string(port));
        req.keep_alive(false);
        co_await http::async_write(stream, req, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
          result.error = "write: " + ec.message();
          co_return;
        }
        beast::flat_buffer buffer;
        co_await read_response(stream, buffer, result);
      },
      asio::detached);
  io.run();
  return result;
}

std::string_view find_response(const HttpResult& res, std::string_view id) {
  if (res.content_type.find("text/event-stream") == std::string::npos) return res.body;
  // One `data:` line per event here (the gateway writes each message on one line).
  std::string_view body = res.body;
  std::size_t pos = 0;
  while (pos < body.size()) {
    std::size_t nl = body.find('\n', pos);
    if (nl == std::string_view::npos) nl = body.size();
    std::string_view line = body.substr(pos, nl - pos);
    pos = nl + 1;
    if (!line.starts_with("data:")) continue;
    line.remove_prefix(5);
    if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    const json::Envelope env = json::parse_envelope(line);
    if (env.kind == json::Kind::kResponse && env.id.in(line) == id) return line;
  }
  return {};
}

std::string check_tool_response(std::string_view message, std::string_view id,
                                std::size_t min_result_bytes) {
  if (message.empty()) return "no JSON-RPC response with id " + std::string(id);
  const json::Envelope env = json::parse_envelope(message);
  if (env.kind != json::Kind::kResponse) return "not a JSON-RPC response: " + excerpt(message);
  if (env.id.in(message) != id)
    return "response id " + std::string(env.id.in(message)) + ", expected " + std::string(id);
  if (!env.error.empty()) return "JSON-RPC error: " + excerpt(env.error.in(message));
  const std::string_view result = env.result.in(message);
  // isError sits at the top level of the result, after or before a possibly huge content.
  for (std::string_view part :
       {result.substr(result.size() > 256 ? result.size() - 256 : 0), result.substr(0, 256)}) {
    const auto at = part.find("\"isError\"");
    if (at != std::string_view::npos &&
        part.substr(at + 9, 8).find("true") != std::string_view::npos) {
      return "tool error: " + excerpt(result);
    }
  }
  if (result.size() < min_result_bytes) {
    return "result of " + std::to_string(result.size()) + " bytes, expected at least " +
           std::to_string(min_result_bytes);
  }
  return {};
}

McpHttpSession::McpHttpSession(asio::any_io_executor ex, std::string host, unsigned short port,
                               std::chrono::milliseconds timeout)
    : stream_(std::move(ex)),
      host_(std::move(host)),
      port_(port),
      host_header_(host_ + ":" + std::to_string(port)),
      timeout_(timeout) {}

asio::awaitable<std::string> McpHttpSession::connect() {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host_, ec);
  if (ec) co_return "bad address '" + host_ + "': " + ec.message();
  stream_.expires_after(timeout_);
  co_await stream_.async_connect(tcp::endpoint(address, port_),
                                 asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return "connect to " + host_header_ + ": " + ec.message();
  stream_.socket().set_option(tcp::no_delay(true), ec);
  buffer_.clear();
  connected_ = true;
  co_return std::string();
}

asio::awaitable<HttpResult> McpHttpSession::exchange(http::verb verb, std::string body,
                                                     std::string_view target) {
  HttpResult out;
  if (!connected_) {
    std::string err = co_await connect();
    if (!err.empty()) {
      out.error = std::move(err);
      co_return out;
    }
  }
  http::request<http::string_body> req{verb, target, 11};
  req.set(http::field::host, host_header_);
  req.set(http::field::accept, "application/json, text/event-stream");
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  if (!session_.empty()) req.set("Mcp-Session-Id", session_);
  if (!protocol_version_.empty()) req.set("MCP-Protocol-Version", protocol_version_);
  if (!tenant_.empty()) req.set("X-Toolbridge-Tenant", tenant_);
  req.body() = std::move(body);
  req.prepare_payload();
  boost::system::error_code ec;
  stream_.expires_after(timeout_);
  co_await http::async_write(stream_, req, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    out.error = "writing the HTTP request: " + ec.message();
  } else {
    co_await read_response(stream_, buffer_, out);
  }
  if (!out.error.empty() || !out.keep_alive) {
    // The gateway closed a keep-alive connection (or it broke): the next exchange reconnects.
    if (out.error.empty()) ++reconnects_;
    stream_.socket().close(ec);
    connected_ = false;
  }
  co_return out;
}

asio::awaitable<std::string> McpHttpSession::open() {
  const std::string init = json::make_request(
      "0", "initialize",
      std::string(R"({"protocolVersion":")") + kProtocolVersion +
          R"(","capabilities":{},"clientInfo":{"name":"toolbridge-bench","version":"0.1.0"}})");
  HttpResult res = co_await exchange(http::verb::post, init);
  if (!res.error.empty()) co_return "initialize: " + res.error;
  if (res.status != 200)
    co_return "initialize: HTTP " + std::to_string(res.status) + ": " + excerpt(res.body);
  const std::string_view message = find_response(res, "0");
  const json::Envelope env = json::parse_envelope(message);
  if (env.kind != json::Kind::kResponse || env.result.empty())
    co_return "initialize failed: " + excerpt(message);
  boost::system::error_code ec;
  bj::value result = bj::parse(env.result.in(message), ec);
  const bj::value* version =
      !ec && result.is_object() ? result.as_object().if_contains("protocolVersion") : nullptr;
  protocol_version_ =
      version && version->is_string() ? std::string(version->as_string()) : kProtocolVersion;
  // A stateless server (supergateway without --stateful) sends no session id; that is allowed.
  session_ = res.session_id;
  HttpResult ack =
      co_await exchange(http::verb::post, json::make_notification("notifications/initialized", {}));
  if (!ack.error.empty()) co_return "notifications/initialized: " + ack.error;
  if (ack.status != 202 && ack.status != 200)
    co_return "notifications/initialized: HTTP " + std::to_string(ack.status);
  co_return std::string();
}

asio::awaitable<std::string> McpHttpSession::call_tool(std::string_view name,
                                                       std::string_view arguments_json,
                                                       std::size_t min_result_bytes) {
  const std::string id = std::to_string(next_id_++);
  std::string params = "{\"name\":" + json::quote(name) + ",\"arguments\":";
  params += arguments_json;
  params += '}';
  HttpResult res =
      co_await exchange(http::verb::post, json::make_request(id, "tools/call", params));
  if (!res.error.empty()) co_return res.error;
  if (res.status != 200) co_return "HTTP " + std::to_string(res.status) + ": " + excerpt(res.body);
  co_return check_tool_response(find_response(res, id), id, min_result_bytes);
}

asio::awaitable<std::string> McpHttpSession::call_tool_response(std::string_view name,
                                                                std::string_view arguments_json,
                                                                std::string& response) {
  const std::string id = std::to_string(next_id_++);
  std::string params = "{\"name\":" + json::quote(name) + ",\"arguments\":";
  params += arguments_json;
  params += '}';
  HttpResult res =
      co_await exchange(http::verb::post, json::make_request(id, "tools/call", params));
  if (!res.error.empty()) co_return res.error;
  if (res.status != 200) co_return "HTTP " + std::to_string(res.status) + ": " + excerpt(res.body);
  response = std::string(find_response(res, id));
  co_return check_tool_response(response, id, 0);
}

asio::awaitable<HttpResult> McpHttpSession::post(std::string_view target, std::string body) {
  HttpResult res = co_await exchange(http::verb::post, std::move(body), target);
  co_return res;
}

asio::awaitable<void> McpHttpSession::close() {
  if (!session_.empty() && connected_) {
    HttpResult res = co_await exchange(http::verb::delete_, std::string());
    (void)res;
  }
  session_.clear();
  boost::system::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.socket().close(ec);
  connected_ = false;
}

}  // namespace toolbridge::bench
