#include <boost/json.hpp>
#include <iostream>
#include <memory>

#include "app/commands.h"
#include "json/envelope.h"
#include "transport/blocking_http_client.h"

namespace toolbridge::app {

namespace bj = boost::json;
using transport::Headers;
using transport::http::verb;

namespace {

// A minimal MCP client session over Streamable HTTP, enough for one-shot CLI commands.
class CliSession {
 public:
  explicit CliSession(transport::Url url) : client_(std::move(url)) {}
  ~CliSession() {
    if (!session_.empty()) {
      transport::BlockingResponse res;
      std::string error;
      client_.request(verb::delete_, "", headers(), res, error);
    }
  }

  bool open(std::string& error) {
    bj::value r;
    if (!call("initialize",
              bj::object{
                  {"protocolVersion", "2025-11-25"},
                  {"capabilities", bj::object{}},
                  {"clientInfo", bj::object{{"name", "toolbridge-cli"}, {"version", "0.1.0"}}}},
              r, error)) {
      return false;
    }
    notify("notifications/initialized");
    return true;
  }

  // Returns false with `error` on transport or JSON-RPC errors; `result` is the result object.
  bool call(const std::string& method, bj::object params, bj::value& result, std::string& error) {
    const std::string body =
        json::make_request(std::to_string(next_id_++), method, bj::serialize(params));
    transport::BlockingResponse res;
    if (!client_.request(verb::post, body, headers(), res, error)) return false;
    if (session_.empty()) session_ = res.header("Mcp-Session-Id");
    std::string payload = res.body;
    for (const auto& e : res.events) {
      // The response is the event that has an id and no method.
      boost::system::error_code ec;
      bj::value v = bj::parse(e, ec);
      if (!ec && v.is_object() && v.as_object().contains("id") && !v.as_object().contains("method"))
        payload = e;
    }
    boost::system::error_code ec;
    bj::value v = bj::parse(payload, ec);
    if (ec || !v.is_object()) {
      error = "HTTP " + std::to_string(res.status) + ": " +
              (payload.empty() ? "(empty body)" : payload);
      return false;
    }
    if (const auto* e = v.as_object().if_contains("error")) {
      const auto* m = e->is_object() ? e->as_object().if_contains("message") : nullptr;
      error = m && m->is_string() ? std::string(m->as_string()) : bj::serialize(*e);
      return false;
    }
    result = v.as_object()["result"];
    return true;
  }

  void notify(const std::string& method) {
    transport::BlockingResponse res;
    std::string error;
    client_.request(verb::post, json::make_notification(method, {}), headers(), res, error);
  }

 private:
  Headers headers() const {
    Headers h{{"Accept", "application/json, text/event-stream"}};
    if (!session_.empty()) {
      h.emplace_back("Mcp-Session-Id", session_);
      h.emplace_back("MCP-Protocol-Version", "2025-11-25");
    }
    return h;
  }
  transport::BlockingHttpClient client_;
  std::string session_;
  int next_id_ = 1;
};

bool connect(const std::string& url, std::unique_ptr<CliSession>& out) {
  std::string error;
  auto parsed = transport::parse_url(url, error);
  if (!parsed) {
    std::cerr << "toolbridge: " << error << "\n";
    return false;
  }
  out = std::make_unique<CliSession>(*parsed);
  if (!out->open(error)) {
    std::cerr << "toolbridge: " << error << "\n";
    return false;
  }
  return true;
}

// key=value: the value is JSON when it parses as JSON (numbers, true, {...}), else a string.
bj::value cli_value(const std::string& text) {
  boost::system::error_code ec;
  bj::value v = bj::parse(text, ec);
  return ec ? bj::value(bj::string(text)) : v;
}

}  // namespace

int run_tools(const std::string& url, bool json_output) {
  std::unique_ptr<CliSession> s;
  if (!connect(url, s)) return 2;
  bj::value result;
  std::string error;
  if (!s->call("tools/list", {}, result, error)) {
    std::cerr << "toolbridge: tools/list failed: " << error << "\n";
    return 2;
  }
  if (json_output) {
    std::cout << bj::serialize(result) << "\n";
    return 0;
  }
  for (const auto& t : result.at("tools").as_array()) {
    const auto& o = t.as_object();
    std::string desc = o.contains("description") && o.at("description").is_string()
                           ? std::string(o.at("description").as_string())
                           : std::string();
    if (auto nl = desc.find('\n'); nl != std::string::npos) desc = desc.substr(0, nl);
    std::cout << std::string(o.at("name").as_string());
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
    bj::value v = bj::parse(json_args, ec);
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
  bj::value result;
  std::string error;
  if (!s->call("tools/call", bj::object{{"name", name}, {"arguments", args}}, result, error)) {
    std::cerr << "toolbridge: " << error << "\n";
    return 2;
  }
  const auto& r = result.as_object();
  const bool is_error =
      r.contains("isError") && r.at("isError").is_bool() && r.at("isError").as_bool();
  if (json_output) {
    std::cout << bj::serialize(result) << "\n";
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
