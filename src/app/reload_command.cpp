// `toolbridge reload`: asks a running gateway to re-read its config file (POST /admin/reload,
// docs/reload.md) and prints what changed, or why nothing did.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <cstdlib>
#include <iostream>

#include "app/commands.h"
#include "base/spawn.h"
#include "json/parse.h"
#include "transport/http_client.h"
#include "transport/url.h"

namespace toolbridge::app {

namespace asio = boost::asio;
namespace bj = boost::json;

namespace {

constexpr std::size_t kMaxAnswerBytes = 1u << 20;

std::string text_of(const bj::object& o, std::string_view key) {
  const bj::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

}  // namespace

int run_reload(const std::string& url) {
  auto parsed = transport::parse_url(url);
  if (!parsed) {
    std::cerr << "toolbridge: " << parsed.error() << "\n";
    return 2;
  }
  // The gateway's MCP URL (…/mcp) or its base: the endpoint is at the root of its origin.
  parsed->target = "/admin/reload";
  asio::io_context io;
  transport::HttpClientOptions options;
  options.user_agent = "toolbridge-cli";
  transport::HttpClient client(io.get_executor(), options);
  transport::HttpRequest req;
  req.verb = transport::http::verb::post;
  req.url = *parsed;
  // A gateway with API keys (gateway.auth): the key from the environment, never a flag.
  if (const char* token = std::getenv("TOOLBRIDGE_TOKEN"); token && *token)
    req.headers.emplace_back("Authorization", std::string("Bearer ") + token);
  // Applying waits for changed servers to start (gateway.ready_timeout at most).
  req.header_timeout = transport::kNoTimeout;
  req.body_timeout = transport::kNoTimeout;
  transport::HttpResponse res;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { res = co_await client.fetch(req, kMaxAnswerBytes); },
      base::log_failure("reload request"));
  io.run();
  if (res.status == 0) {
    std::cerr << "toolbridge: " << res.error.message << " (is `toolbridge serve` running?)\n";
    return 2;
  }
  boost::system::error_code ec;
  bj::value v = json::parse(res.body, ec);
  if (ec || !v.is_object()) {
    std::cerr << "toolbridge: HTTP " << res.status << ": " << res.body << "\n";
    return 2;
  }
  const bj::object& o = v.as_object();
  const bj::value* generation = o.if_contains("generation");
  const std::string gen = generation ? bj::serialize(*generation) : "?";
  if (res.status != 200) {
    std::string why = text_of(o, "error");
    if (why.empty()) why = res.body;
    std::cerr << "toolbridge: reload refused (HTTP " << res.status << "): " << why
              << "\nthe running configuration (generation " << gen << ") stays\n";
    return 1;
  }
  std::cout << "reloaded: generation " << gen << ", hash " << text_of(o, "hash") << ": "
            << text_of(o, "summary") << "\n";
  return 0;
}

}  // namespace toolbridge::app
