#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <memory>

#include "app/commands.h"
#include "base/expected.h"
#include "base/spawn.h"
#include "json/envelope.h"
#include "json/parse.h"
#include "transport/http_client.h"
#include "transport/sse_reader.h"

namespace toolbridge::app {

namespace asio = boost::asio;
namespace bj = boost::json;
using transport::http::verb;

namespace {

// What one CLI request got back: a body, or the data of its SSE events.
struct CliReply {
  std::string error;  // a transport failure, for people
  int status = 0;
  std::string session_id;
  std::string body;                 // a plain answer
  std::vector<std::string> events;  // SSE message payloads, in order
};

// A minimal MCP client session over Streamable HTTP, enough for one-shot CLI commands. The CLI
// is synchronous: each request runs the shared async client on the session's own io_context.
class CliSession {
 public:
  explicit CliSession(transport::Url url)
      : url_(std::move(url)), client_(io_.get_executor(), client_options()) {}
  ~CliSession() {
    if (!session_.empty()) request(verb::delete_, "");
  }

  base::Status open() {
    const base::Expected<bj::value> r = call(
        "initialize",
        bj::object{{"protocolVersion", "2025-11-25"},
                   {"capabilities", bj::object{}},
                   {"clientInfo", bj::object{{"name", "toolbridge-cli"}, {"version", "0.1.0"}}}});
    if (!r) return base::fail(r.error());
    notify("notifications/initialized");
    return {};
  }

  // The result object, or the transport's or the JSON-RPC error.
  base::Expected<bj::value> call(const std::string& method, bj::object params) {
    const std::string body =
        json::make_request(std::to_string(next_id_++), method, bj::serialize(params));
    CliReply res = request(verb::post, body);
    if (!res.error.empty()) return base::fail(std::move(res.error));
    if (session_.empty()) session_ = res.session_id;
    std::string payload = res.body;
    for (const auto& e : res.events) {
      // The response is the event that has an id and no method.
      boost::system::error_code ec;
      bj::value v = json::parse(e, ec);
      if (!ec && v.is_object() && v.as_object().contains("id") &&
          !v.as_object().contains("method")) {
        payload = e;
      }
    }
    boost::system::error_code ec;
    bj::value v = json::parse(payload, ec);
    if (ec || !v.is_object()) {
      return base::fail("HTTP " + std::to_string(res.status) + ": " +
                        (payload.empty() ? "(empty body)" : payload));
    }
    if (const auto* e = v.as_object().if_contains("error")) {
      const auto* m = e->is_object() ? e->as_object().if_contains("message") : nullptr;
      return base::fail(m && m->is_string() ? std::string(m->as_string()) : bj::serialize(*e));
    }
    const bj::value* result = v.as_object().if_contains("result");
    if (!result || !result->is_object()) {
      return base::fail("the answer to " + method + " has no result object: " + payload);
    }
    return *result;
  }

  void notify(const std::string& method) {
    request(verb::post, json::make_notification(method, {}));
  }

 private:
  static transport::HttpClientOptions client_options() {
    transport::HttpClientOptions o;
    o.user_agent = "toolbridge-cli";
    return o;
  }

  CliReply request(verb method, const std::string& body) {
    transport::HttpRequest req;
    req.verb = method;
    req.url = url_;
    req.headers.emplace_back("Accept", "application/json, text/event-stream");
    if (!session_.empty()) {
      req.headers.emplace_back("Mcp-Session-Id", session_);
      req.headers.emplace_back("MCP-Protocol-Version", "2025-11-25");
    }
    if (!body.empty()) req.headers.emplace_back("Content-Type", "application/json");
    // A gateway with API keys (gateway.auth): the key from the environment, never a flag.
    if (const char* token = std::getenv("TOOLBRIDGE_TOKEN"); token && *token)
      req.headers.emplace_back("Authorization", std::string("Bearer ") + token);
    req.body = body;
    // A tool call may run as long as the gateway's deadline for it, which bounds the wait.
    req.header_timeout = transport::kNoTimeout;
    req.body_timeout = transport::kNoTimeout;
    transport::HttpResponse res;
    asio::co_spawn(
        io_,
        [&]() -> asio::awaitable<void> {
          res = co_await client_.fetch(req, std::numeric_limits<std::size_t>::max());
        },
        base::log_failure("request"));
    io_.restart();
    io_.run();
    return to_reply(std::move(res));
  }

  static CliReply to_reply(transport::HttpResponse res) {
    CliReply out;
    const transport::HttpError& e = res.error;
    if (e.step == transport::HttpStep::kTls || e.step == transport::HttpStep::kResolve ||
        e.step == transport::HttpStep::kConnect || e.step == transport::HttpStep::kHandshake) {
      out.error = e.message + " (is `toolbridge serve` running?)";
      return out;
    }
    if (e) {
      out.error = "HTTP exchange failed: " + e.message;
      return out;
    }
    out.status = res.status;
    out.session_id = res.header("Mcp-Session-Id");
    if (res.header("Content-Type").find("text/event-stream") != std::string::npos) {
      transport::SseReader reader;
      reader.feed(res.body, [&](std::string data) { out.events.push_back(std::move(data)); });
      reader.feed("\n\n", [&](std::string data) { out.events.push_back(std::move(data)); });
    } else {
      out.body = std::move(res.body);
    }
    return out;
  }

  transport::Url url_;
  asio::io_context io_;
  transport::HttpClient client_;
  std::string session_;
  int next_id_ = 1;
};

bool connect(const std::string& url, std::unique_ptr<CliSession>& out) {
  auto parsed = transport::parse_url(url);
  if (!parsed) {
    std::cerr << "toolbridge: " << parsed.error() << "\n";
    return false;
  }
  out = std::make_unique<CliSession>(*parsed);
  if (const base::Status opened = out->open(); !opened) {
    std::cerr << "toolbridge: " << opened.error() << "\n";
    return false;
  }
  return true;
}

// key=value: the value is JSON when it parses as JSON (numbers, true, {...}), else a string.
bj::value cli_value(const std::string& text) {
  boost::system::error_code ec;
  bj::value v = json::parse(text, ec);
  return ec ? bj::value(bj::string(text)) : v;
}

}  // namespace

int run_tools(const std::string& url, bool json_output) {
  std::unique_ptr<CliSession> s;
  if (!connect(url, s)) return 2;
  const base::Expected<bj::value> result = s->call("tools/list", {});
  if (!result) {
    std::cerr << "toolbridge: tools/list failed: " << result.error() << "\n";
    return 2;
  }
  if (json_output) {
    std::cout << bj::serialize(*result) << "\n";
    return 0;
  }
  const bj::value* tools = result->as_object().if_contains("tools");
  if (!tools || !tools->is_array()) {
    std::cerr << "toolbridge: tools/list answered without a tools array\n";
    return 2;
  }
  for (const auto& t : tools->as_array()) {
    const auto* entry = t.if_object();
    const auto* name = entry ? entry->if_contains("name") : nullptr;
    if (!name || !name->is_string()) continue;  // not a tool a call could name
    const auto& o = *entry;
    std::string desc = o.contains("description") && o.at("description").is_string()
                           ? std::string(o.at("description").as_string())
                           : std::string();
    if (auto nl = desc.find('\n'); nl != std::string::npos) desc = desc.substr(0, nl);
    std::cout << std::string(name->as_string());
    if (!desc.empty()) std::cout << "  " << desc;
    std::cout << "\n";
  }
  return 0;
}

int run_call(const std::string& url, const std::string& name, const std::vector<std::string>& kv,
             const std::string& json_args, bool json_output) {
  bj::object args;
  if (!json_args.empty()) {
    boost::system::error_code ec;
    bj::value v = json::parse(json_args, ec);
    if (ec || !v.is_object()) {
      std::cerr << "toolbridge: --json must be a JSON object, e.g. '{\"text\": \"hi\"}'\n";
      return 2;
    }
    args = std::move(v.as_object());
  }
  for (const auto& pair : kv) {
    const auto eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "toolbridge: argument '" << pair << "' is not key=value\n";
      return 2;
    }
    args[pair.substr(0, eq)] = cli_value(pair.substr(eq + 1));
  }
  std::unique_ptr<CliSession> s;
  if (!connect(url, s)) return 2;
  const base::Expected<bj::value> result =
      s->call("tools/call", bj::object{{"name", name}, {"arguments", args}});
  if (!result) {
    std::cerr << "toolbridge: " << result.error() << "\n";
    return 2;
  }
  const auto& r = result->as_object();
  const bool is_error =
      r.contains("isError") && r.at("isError").is_bool() && r.at("isError").as_bool();
  if (json_output) {
    std::cout << bj::serialize(*result) << "\n";
  } else if (const auto* content = r.if_contains("content"); content && content->is_array()) {
    for (const auto& c : content->as_array()) {
      const auto* text = c.is_object() ? c.as_object().if_contains("text") : nullptr;
      if (text && text->is_string()) {
        (is_error ? std::cerr : std::cout) << std::string(text->as_string()) << "\n";
      } else {
        std::cout << bj::serialize(c) << "\n";
      }
    }
  }
  return is_error ? 1 : 0;
}

}  // namespace toolbridge::app
