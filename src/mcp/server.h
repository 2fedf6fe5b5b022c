#pragma once
// Server side of MCP on one Asio thread: requests run concurrently as coroutines, tools can
// report progress, log, and ask the client (sampling, elicitation) while they run. The transport
// is pluggable: run_stdio() serves stdin/stdout; an HTTP host (mcp/http_host.h) feeds messages
// with receive() and routes what the server sends through an Outbox.
// `toolbridge-fixture` is built on it.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mcp/protocol.h"

namespace toolbridge::mcp {

class Server;

// What a running tool can do besides returning its result.
class ToolContext {
 public:
  // `request_id`: raw JSON id of the tools/call being served; messages the tool sends are
  // related to it (Streamable HTTP sends them on that request's stream).
  ToolContext(Server& server, std::optional<boost::json::value> progress_token,
              std::string request_id = {})
      : server_(server), progress_token_(std::move(progress_token)), request_id_(std::move(request_id)) {}
  bool has_progress_token() const { return progress_token_.has_value(); }
  void progress(double progress, std::optional<double> total, const std::string& message = {});
  void log(const std::string& level, const boost::json::value& data, const std::string& logger = {});
  // Sends a request to the client and waits for its answer. Returns {"error": {...}} on a
  // JSON-RPC error, otherwise the result object.
  boost::asio::awaitable<boost::json::value> ask_client(const std::string& method,
                                                        boost::json::object params);
  // Writes a line to the client as-is (fault injection: it need not be JSON).
  void send_raw(std::string line);
  const ClientCapabilities& client() const;
  Version version() const;

 private:
  Server& server_;
  std::optional<boost::json::value> progress_token_;
  std::string request_id_;
};

using ToolHandler = std::function<boost::asio::awaitable<boost::json::object>(
    boost::json::object args, ToolContext& ctx)>;
using ResourceHandler = std::function<boost::json::object(const std::string& uri)>;
using PromptHandler = std::function<boost::json::object(const boost::json::object& args)>;

struct ToolDef {
  std::string name;
  std::string description;
  boost::json::object input_schema;
  ToolHandler handler;
  boost::json::object annotations;
};

struct ResourceDef {
  std::string uri;           // exact URI, or a template with {var} when is_template
  std::string name;
  std::string mime_type;
  bool is_template = false;
  ResourceHandler read;      // returns {"contents": [...]}
  std::string description;   // optional
};

struct PromptDef {
  std::string name;
  std::string description;
  boost::json::array arguments;
  PromptHandler get;         // returns {"messages": [...]}
};

struct ServerOptions {
  std::string name = "toolbridge-fixture";
  std::string version = "0.1.0";
  std::size_t page_size = 0;           // 0: lists are never paginated
  int init_delay_ms = 0;               // delays the initialize answer (start-up tests)
  std::size_t max_line_bytes = 64u << 20;
};

// Where a server's outgoing messages go. `related` is the raw JSON id of the client request the
// message belongs to (empty: none); `final` marks that request's own response.
using Outbox = std::function<void(std::string message, const std::string& related, bool final)>;

class Server {
 public:
  Server(boost::asio::io_context& io, ServerOptions options);
  ~Server();

  void add_tool(ToolDef def);
  void add_resource(ResourceDef def);
  void add_prompt(PromptDef def);

  // Serves stdin/stdout until stdin closes.
  void run_stdio();
  // For other transports: where outgoing messages go, and one incoming message.
  void set_outbox(Outbox outbox) { outbox_ = std::move(outbox); }
  void receive(std::string_view message);
  // True once an initialize request has been handled.
  bool initialized() const { return initialized_; }

  // Internals used by ToolContext.
  void send(std::string message, const std::string& related = {}, bool final = false);
  boost::asio::awaitable<boost::json::value> request(const std::string& method,
                                                     boost::json::object params,
                                                     const std::string& related = {});
  const ClientCapabilities& client() const { return client_; }
  Version version() const { return version_; }
  bool should_log(const std::string& level) const;

 private:
  struct Impl;
  boost::asio::awaitable<void> handle_request(boost::json::value id, std::string method,
                                              boost::json::object params);
  boost::asio::awaitable<boost::json::value> dispatch(const std::string& method,
                                                      boost::json::object& params,
                                                      boost::json::value& id);
  boost::asio::io_context& io_;
  ServerOptions options_;
  std::unique_ptr<Impl> impl_;
  std::vector<ToolDef> tools_;
  std::vector<ResourceDef> resources_;
  std::vector<PromptDef> prompts_;
  ClientCapabilities client_;
  Version version_ = kLatestVersion;
  int min_log_rank_ = 0;
  bool initialized_ = false;
  Outbox outbox_;
};

// Error result of a tool (isError: true) with one text block.
boost::json::object tool_error(const std::string& message);
// Successful tool result with one text block.
boost::json::object tool_text(const std::string& text);

}  // namespace toolbridge::mcp
