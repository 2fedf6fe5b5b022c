// toolbridge-fixture: an MCP server (stdio, or Streamable HTTP with --http) with tools that
// exercise every path of the gateway (concurrency, large results, crashes, hangs, progress,
// logging, sampling, elicitation), and with --conformance what the official suite expects.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdlib>
#include <iostream>

#include "app/fixture_conformance.h"
#include "mcp/http_host.h"
#include "mcp/server.h"

namespace asio = boost::asio;
namespace bj = boost::json;
using toolbridge::mcp::tool_error;
using toolbridge::mcp::tool_text;
using toolbridge::mcp::ToolContext;

namespace {

bj::object schema(std::initializer_list<std::pair<const char*, const char*>> props,
                  std::initializer_list<const char*> required = {}) {
  bj::object properties;
  for (auto [name, type] : props) properties[name] = bj::object{{"type", type}};
  bj::array req;
  for (const char* r : required) req.push_back(r);
  bj::object s{{"type", "object"}, {"properties", properties}};
  if (!req.empty()) s["required"] = req;
  return s;
}

double number(const bj::object& args, const char* key, double fallback) {
  const auto* v = args.if_contains(key);
  if (!v) return fallback;
  if (v->is_double()) return v->as_double();
  if (v->is_int64()) return static_cast<double>(v->as_int64());
  if (v->is_uint64()) return static_cast<double>(v->as_uint64());
  if (v->is_string()) return std::strtod(v->as_string().c_str(), nullptr);
  return fallback;
}

std::string text(const bj::object& args, const char* key, std::string fallback = {}) {
  const auto* v = args.if_contains(key);
  if (v && v->is_string()) return std::string(v->as_string());
  if (v && !v->is_null()) return bj::serialize(*v);
  return fallback;
}

void usage() {
  std::cerr << "usage: toolbridge-fixture [--init-delay-ms N] [--page-size N] [--name NAME]"
               " [--journal FILE] [--conformance] [--http HOST:PORT]\n"
               "An MCP server for tests and benchmarks: stdio, or Streamable HTTP at /mcp with --http\n"
               "(port 0 picks a free port; prints 'listening on http://HOST:PORT').\n";
}

}  // namespace

int main(int argc, char** argv) {
  toolbridge::mcp::ServerOptions options;
  std::string journal_path;
  std::string http_listen;
  bool conformance = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--init-delay-ms" && has_value) {
      options.init_delay_ms = std::atoi(argv[++i]);
    } else if (arg == "--page-size" && has_value) {
      options.page_size = static_cast<std::size_t>(std::atoi(argv[++i]));
    } else if (arg == "--journal" && has_value) {
      journal_path = argv[++i];
    } else if (arg == "--http" && has_value) {
      http_listen = argv[++i];
    } else if (arg == "--conformance") {
      conformance = true;
    } else if (arg == "--name" && has_value) {
      options.name = argv[++i];
    } else if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else {
      std::cerr << "toolbridge-fixture: unknown argument '" << arg << "'\n";
      usage();
      return 2;
    }
  }

  asio::io_context io;
  long counter = 0;  // shared by every session of an HTTP fixture: one "instance"
  // Registers the fixture's surface on one server (one per session when serving HTTP).
  auto populate = [&](toolbridge::mcp::Server& server) {

  server.add_tool({"echo", "Returns its text argument.", schema({{"text", "string"}}, {"text"}),
                   [](bj::object args, ToolContext&) -> asio::awaitable<bj::object> {
                     co_return tool_text(text(args, "text"));
                   }});
  server.add_tool({"add", "Adds two numbers.", schema({{"a", "number"}, {"b", "number"}}, {"a", "b"}),
                   [](bj::object args, ToolContext&) -> asio::awaitable<bj::object> {
                     const double sum = number(args, "a", 0) + number(args, "b", 0);
                     co_return tool_text(bj::serialize(bj::value(sum == static_cast<double>(static_cast<long long>(sum))
                                                                     ? bj::value(static_cast<long long>(sum))
                                                                     : bj::value(sum))));
                   }});
  server.add_tool({"sleep", "Waits ms milliseconds, then answers.", schema({{"ms", "number"}}, {"ms"}),
                   [&io](bj::object args, ToolContext&) -> asio::awaitable<bj::object> {
                     const auto ms = static_cast<long>(number(args, "ms", 0));
                     asio::steady_timer t(io, std::chrono::milliseconds(ms));
                     co_await t.async_wait(asio::use_awaitable);
                     co_return tool_text("slept " + std::to_string(ms) + " ms");
                   }});
  server.add_tool({"fail", "Returns a tool error (isError: true).", schema({{"message", "string"}}),
                   [](bj::object args, ToolContext&) -> asio::awaitable<bj::object> {
                     co_return tool_error(text(args, "message", "the fixture failed on purpose"));
                   }});
  server.add_tool({"crash", "Exits the server process with the given code.", schema({{"code", "integer"}}),
                   [](bj::object args, ToolContext&) -> asio::awaitable<bj::object> {
                     std::_Exit(static_cast<int>(number(args, "code", 1)));
                     co_return bj::object{};
                   }});
  server.add_tool({"hang", "Never answers.", schema({}),
                   [&io](bj::object, ToolContext&) -> asio::awaitable<bj::object> {
                     asio::steady_timer t(io, asio::steady_timer::time_point::max());
                     boost::system::error_code ec;
                     co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
                     co_return tool_error("hang was interrupted");
                   }});
  server.add_tool({"payload", "Returns one text block of exactly `bytes` 'x' characters.",
                   schema({{"bytes", "integer"}}, {"bytes"}),
                   [](bj::object args, ToolContext&) -> asio::awaitable<bj::object> {
                     co_return tool_text(std::string(static_cast<std::size_t>(number(args, "bytes", 0)), 'x'));
                   }});
  server.add_tool({"counter", "Counts its executions on this server instance.", schema({}),
                   [&counter](bj::object, ToolContext&) -> asio::awaitable<bj::object> {
                     co_return tool_text(std::to_string(++counter));
                   }});
  server.add_tool({"progress", "Sends `steps` progress notifications, then answers.",
                   schema({{"steps", "integer"}, {"delay_ms", "integer"}}),
                   [&io](bj::object args, ToolContext& ctx) -> asio::awaitable<bj::object> {
                     const int steps = static_cast<int>(number(args, "steps", 3));
                     const auto delay = std::chrono::milliseconds(static_cast<long>(number(args, "delay_ms", 10)));
                     for (int i = 1; i <= steps; ++i) {
                       ctx.progress(i, steps, "step " + std::to_string(i));
                       asio::steady_timer t(io, delay);
                       co_await t.async_wait(asio::use_awaitable);
                     }
                     co_return tool_text("done");
                   }});
  server.add_tool({"log", "Sends a notifications/message log entry, then answers.",
                   schema({{"level", "string"}, {"message", "string"}}),
                   [](bj::object args, ToolContext& ctx) -> asio::awaitable<bj::object> {
                     ctx.log(text(args, "level", "info"), bj::string(text(args, "message", "hello")), "fixture");
                     co_return tool_text("logged");
                   }});
  server.add_tool({"sample", "Asks the client for an LLM sample (sampling/createMessage).",
                   schema({{"prompt", "string"}}),
                   [](bj::object args, ToolContext& ctx) -> asio::awaitable<bj::object> {
                     if (!ctx.client().sampling) co_return tool_error("the client does not support sampling");
                     bj::object params{
                         {"messages", bj::array{bj::object{
                                          {"role", "user"},
                                          {"content", bj::object{{"type", "text"}, {"text", text(args, "prompt", "hi")}}}}}},
                         {"maxTokens", 100}};
                     bj::value answer = co_await ctx.ask_client("sampling/createMessage", std::move(params));
                     if (auto* err = answer.as_object().if_contains("error")) {
                       co_return tool_error("sampling failed: " + bj::serialize(*err));
                     }
                     const auto* content = answer.as_object().if_contains("content");
                     if (content && content->is_object()) {
                       co_return tool_text(text(content->as_object(), "text"));
                     }
                     co_return tool_text(bj::serialize(answer));
                   }});
  server.add_tool({"elicit", "Asks the user for input (elicitation/create).", schema({{"message", "string"}}),
                   [](bj::object args, ToolContext& ctx) -> asio::awaitable<bj::object> {
                     if (!ctx.client().elicitation) co_return tool_error("the client does not support elicitation");
                     bj::object params{
                         {"message", text(args, "message", "Please answer")},
                         {"requestedSchema", schema({{"answer", "string"}})}};
                     bj::value answer = co_await ctx.ask_client("elicitation/create", std::move(params));
                     if (auto* err = answer.as_object().if_contains("error")) {
                       co_return tool_error("elicitation failed: " + bj::serialize(*err));
                     }
                     co_return tool_text(bj::serialize(answer));
                   }});

  server.add_tool({"journal", "Appends `key` to the --journal file: a non-idempotent side effect tests can audit.",
                   schema({{"key", "string"}}, {"key"}),
                   [&journal_path](bj::object args, ToolContext&) -> asio::awaitable<bj::object> {
                     if (journal_path.empty()) co_return tool_error("start the fixture with --journal FILE");
                     const std::string line = text(args, "key") + "\n";
                     const int fd = ::open(journal_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
                     if (fd < 0) co_return tool_error("cannot open the journal");
                     // One write with O_APPEND: lines from concurrent instances never interleave.
                     const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
                     ::close(fd);
                     co_return ok ? tool_text("recorded") : tool_error("journal write failed");
                   }});
  server.add_tool({"garbage", "Writes a line that is not JSON-RPC to stdout, then answers.",
                   schema({{"text", "string"}}),
                   [](bj::object args, ToolContext& ctx) -> asio::awaitable<bj::object> {
                     ctx.send_raw(text(args, "text", "this is not json {"));
                     co_return tool_text("sent garbage");
                   }});
  server.add_tool({"pid", "Returns this server process's pid: which instance served the call.", schema({}),
                   [](bj::object, ToolContext&) -> asio::awaitable<bj::object> {
                     co_return tool_text(std::to_string(::getpid()));
                   }});

  server.add_resource({"fixture://static/hello", "hello", "text/plain", false, [](const std::string& uri) {
                         return bj::object{{"contents", bj::array{bj::object{
                                                {"uri", uri}, {"mimeType", "text/plain"}, {"text", "hello"}}}}};
                       }});
  server.add_resource({"fixture://echo/{text}", "echo", "text/plain", true, [](const std::string& uri) {
                         const std::string prefix = "fixture://echo/";
                         return bj::object{{"contents", bj::array{bj::object{
                                                {"uri", uri}, {"mimeType", "text/plain"},
                                                {"text", uri.substr(prefix.size())}}}}};
                       }});
  server.add_prompt({"greet", "Greets someone by name.",
                     bj::array{bj::object{{"name", "name"}, {"description", "who to greet"}, {"required", true}}},
                     [](const bj::object& args) {
                       return bj::object{
                           {"description", "A greeting"},
                           {"messages", bj::array{bj::object{
                                            {"role", "user"},
                                            {"content", bj::object{{"type", "text"},
                                                                   {"text", "Hello, " + text(args, "name", "world") + "!"}}}}}}};
                     }});
    if (conformance) toolbridge::fixture::add_conformance_surface(server, io);
  };

  if (http_listen.empty()) {
    toolbridge::mcp::Server server(io, options);
    populate(server);
    server.run_stdio();
    io.run();
    return 0;
  }
  const auto colon = http_listen.rfind(':');
  if (colon == std::string::npos) {
    std::cerr << "toolbridge-fixture: --http wants HOST:PORT, got '" << http_listen << "'\n";
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server
  toolbridge::transport::HttpServerOptions http;
  http.host = http_listen.substr(0, colon);
  http.port = static_cast<unsigned short>(std::atoi(http_listen.c_str() + colon + 1));
  toolbridge::mcp::HttpHost host(io, http, [&]() {
    auto server = std::make_unique<toolbridge::mcp::Server>(io, options);
    populate(*server);
    return server;
  });
  if (std::string err = host.listen(); !err.empty()) {
    std::cerr << "toolbridge-fixture: " << err << "\n";
    return 1;
  }
  std::cout << "listening on http://" << http.host << ":" << host.port() << std::endl;
  io.run();
  return 0;
}
