#include "mcp/server.h"

#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <deque>

#include "json/envelope.h"
#include "transport/line_framer.h"

namespace toolbridge::mcp {

namespace asio = boost::asio;
namespace bj = boost::json;

namespace {
// A one-shot slot a coroutine waits on until the answer to its request arrives.
struct Waiter {
  explicit Waiter(asio::any_io_executor ex) : timer(ex, asio::steady_timer::time_point::max()) {}
  asio::steady_timer timer;
  std::optional<bj::value> answer;
};
}  // namespace

struct Server::Impl {
  std::int64_t next_id = 1;
  std::map<std::int64_t, std::shared_ptr<Waiter>> waiting;
};

namespace {
// stdin/stdout of the process, with writes coalesced.
struct StdioPort {
  StdioPort(asio::io_context& io, std::size_t max_line)
      : in(io, ::dup(STDIN_FILENO)), out(io, ::dup(STDOUT_FILENO)), framer(max_line) {}
  asio::posix::stream_descriptor in;
  asio::posix::stream_descriptor out;
  transport::LineFramer framer;
  std::deque<std::string> queue;
  bool writing = false;
};
}  // namespace

void ToolContext::progress(double progress, std::optional<double> total,
                           const std::string& message) {
  if (!progress_token_) return;
  bj::object p{{"progressToken", *progress_token_}, {"progress", progress}};
  if (total) p["total"] = *total;
  if (!message.empty()) p["message"] = message;
  server_.send(json::make_notification("notifications/progress", bj::serialize(p)), request_id_);
}

void ToolContext::log(const std::string& level, const bj::value& data, const std::string& logger) {
  if (!server_.should_log(level)) return;
  bj::object p{{"level", level}, {"data", data}};
  if (!logger.empty()) p["logger"] = logger;
  server_.send(json::make_notification("notifications/message", bj::serialize(p)), request_id_);
}

asio::awaitable<bj::value> ToolContext::ask_client(const std::string& method, bj::object params) {
  bj::value answer = co_await server_.request(method, std::move(params), request_id_);
  co_return answer;
}

const ClientCapabilities& ToolContext::client() const { return server_.client(); }
void ToolContext::send_raw(std::string line) { server_.send(std::move(line), request_id_); }
Version ToolContext::version() const { return server_.version(); }

bj::object tool_error(const std::string& message) {
  return bj::object{{"content", bj::array{bj::object{{"type", "text"}, {"text", message}}}},
                    {"isError", true}};
}

bj::object tool_text(const std::string& text) {
  return bj::object{{"content", bj::array{bj::object{{"type", "text"}, {"text", text}}}},
                    {"isError", false}};
}

Server::Server(asio::io_context& io, ServerOptions options)
    : io_(io), options_(std::move(options)), impl_(std::make_unique<Impl>()) {}

Server::~Server() = default;

void Server::add_tool(ToolDef def) { tools_.push_back(std::move(def)); }
void Server::add_resource(ResourceDef def) { resources_.push_back(std::move(def)); }
void Server::add_prompt(PromptDef def) { prompts_.push_back(std::move(def)); }

bool Server::should_log(const std::string& level) const {
  return log_level_rank(level) >= min_log_rank_;
}

void Server::send(std::string message, const std::string& related, bool final) {
  if (outbox_) outbox_(std::move(message), related, final);
}

asio::awaitable<bj::value> Server::request(const std::string& method, bj::object params,
                                           const std::string& related) {
  const std::int64_t id = impl_->next_id++;
  auto waiter = std::make_shared<Waiter>(io_.get_executor());
  impl_->waiting[id] = waiter;
  send(json::make_request(std::to_string(id), method, bj::serialize(params)), related);
  boost::system::error_code ec;
  co_await waiter->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  impl_->waiting.erase(id);
  if (!waiter->answer) co_return bj::object{{"error", bj::object{{"message", "no answer"}}}};
  co_return std::move(*waiter->answer);
}

void Server::run_stdio() {
  auto port = std::make_shared<StdioPort>(io_, options_.max_line_bytes);
  outbox_ = [this, port](std::string message, const std::string&, bool) {
    message.push_back('\n');
    port->queue.push_back(std::move(message));
    if (port->writing) return;
    port->writing = true;
    asio::co_spawn(
        io_,
        [this, port]() -> asio::awaitable<void> {
          // Coalesce everything queued meanwhile into one write: one wake-up of the reader.
          while (!port->queue.empty()) {
            std::string batch;
            while (!port->queue.empty()) {
              batch += port->queue.front();
              port->queue.pop_front();
            }
            boost::system::error_code ec;
            co_await asio::async_write(port->out, asio::buffer(batch),
                                       asio::redirect_error(asio::use_awaitable, ec));
            if (ec) {
              port->queue.clear();
              io_.stop();
            }
          }
          port->writing = false;
        },
        asio::detached);
  };
  asio::co_spawn(
      io_,
      [this, port]() -> asio::awaitable<void> {
        std::vector<char> buf(64 * 1024);
        for (;;) {
          boost::system::error_code ec;
          const std::size_t n = co_await port->in.async_read_some(
              asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
          if (ec) break;
          if (!port->framer.feed(std::string_view(buf.data(), n),
                                 [this](std::string_view line) { receive(line); })) {
            break;
          }
        }
        io_.stop();  // stdin closed: the client is gone
      },
      asio::detached);
}

void Server::receive(std::string_view line) {
  const json::Envelope env = json::parse_envelope(line);
  if (env.kind == json::Kind::kInvalid) {
    send(json::make_error({}, env.problem.rfind("not JSON", 0) == 0 ? json::kParseError
                                                                   : json::kInvalidRequest,
                          env.problem));
    return;
  }
  bj::value id = env.id.empty() ? bj::value() : bj::parse(env.id.in(line));
  if (env.kind == json::Kind::kResponse) {
    if (!id.is_int64()) return;
    auto it = impl_->waiting.find(id.as_int64());
    if (it == impl_->waiting.end()) return;
    it->second->answer = env.error.empty()
                             ? bj::parse(env.result.in(line))
                             : bj::value(bj::object{{"error", bj::parse(env.error.in(line))}});
    it->second->timer.cancel();
    return;
  }
  bj::object params;
  if (!env.params.empty()) {
    bj::value p = bj::parse(env.params.in(line));
    if (p.is_object()) params = std::move(p.as_object());
  }
  if (env.kind == json::Kind::kNotification) {
    return;  // initialized, cancelled, roots/list_changed: nothing the fixture acts on
  }
  asio::co_spawn(io_, handle_request(std::move(id), env.method, std::move(params)),
                 asio::detached);
}

asio::awaitable<void> Server::handle_request(bj::value id, std::string method, bj::object params) {
  bj::value result = co_await dispatch(method, params, id);
  const std::string id_text = bj::serialize(id);
  if (result.is_object() && result.as_object().contains("__error")) {
    const auto& e = result.as_object().at("__error").as_object();
    send(json::make_error(id_text, static_cast<int>(e.at("code").as_int64()),
                          std::string(e.at("message").as_string())),
         id_text, true);
  } else {
    send(json::make_result(id_text, bj::serialize(result)), id_text, true);
  }
}

namespace {
bj::value rpc_error(int code, const std::string& message) {
  return bj::object{{"__error", bj::object{{"code", code}, {"message", message}}}};
}

// Paginates `items` with an opaque numeric cursor.
bj::value page(bj::array items, const char* key, const bj::object& params, std::size_t size) {
  std::size_t start = 0;
  if (auto* c = params.if_contains("cursor"); c && c->is_string()) {
    start = std::strtoul(c->as_string().c_str(), nullptr, 10);
  }
  bj::object out;
  if (size == 0) {
    out[key] = std::move(items);
    return out;
  }
  bj::array slice;
  for (std::size_t i = start; i < items.size() && i < start + size; ++i) slice.push_back(items[i]);
  out[key] = std::move(slice);
  if (start + size < items.size()) out["nextCursor"] = std::to_string(start + size);
  return out;
}

// Matches "scheme://path/{var}" templates against a URI; returns captured variables.
std::optional<std::map<std::string, std::string>> match_template(const std::string& tmpl,
                                                                 const std::string& uri) {
  std::map<std::string, std::string> vars;
  std::size_t t = 0, u = 0;
  while (t < tmpl.size()) {
    if (tmpl[t] == '{') {
      const std::size_t close = tmpl.find('}', t);
      const std::string name = tmpl.substr(t + 1, close - t - 1);
      const char stop = close + 1 < tmpl.size() ? tmpl[close + 1] : '\0';
      std::size_t end = stop ? uri.find(stop, u) : uri.size();
      if (end == std::string::npos) return std::nullopt;
      vars[name] = uri.substr(u, end - u);
      u = end;
      t = close + 1;
    } else {
      if (u >= uri.size() || uri[u] != tmpl[t]) return std::nullopt;
      ++t;
      ++u;
    }
  }
  if (u != uri.size()) return std::nullopt;
  return vars;
}
}  // namespace

asio::awaitable<bj::value> Server::dispatch(const std::string& method, bj::object& params,
                                            bj::value& id) {
  if (method == "initialize") {
    if (options_.init_delay_ms > 0) {
      asio::steady_timer t(io_, std::chrono::milliseconds(options_.init_delay_ms));
      co_await t.async_wait(asio::use_awaitable);
    }
    std::string requested;
    if (auto* v = params.if_contains("protocolVersion"); v && v->is_string()) {
      requested = v->as_string().c_str();
    }
    version_ = negotiate(requested);
    if (auto* caps = params.if_contains("capabilities"); caps && caps->is_object()) {
      const auto& c = caps->as_object();
      client_.sampling = c.contains("sampling");
      client_.elicitation = c.contains("elicitation");
      client_.roots = c.contains("roots");
    }
    initialized_ = true;
    co_return bj::object{
        {"protocolVersion", to_string(version_)},
        {"capabilities", bj::object{{"tools", bj::object{{"listChanged", true}}},
                                    {"resources", bj::object{{"listChanged", false}}},
                                    {"prompts", bj::object{{"listChanged", false}}},
                                    {"logging", bj::object{}},
                                    {"completions", bj::object{}}}},
        {"serverInfo", bj::object{{"name", options_.name}, {"version", options_.version}}}};
  }
  if (method == "ping") co_return bj::object{};
  if (method == "tools/list") {
    bj::array items;
    for (const auto& t : tools_) {
      bj::object o{{"name", t.name}, {"description", t.description}, {"inputSchema", t.input_schema}};
      if (!t.annotations.empty()) o["annotations"] = t.annotations;
      items.push_back(std::move(o));
    }
    co_return page(std::move(items), "tools", params, options_.page_size);
  }
  if (method == "tools/call") {
    std::string name;
    if (auto* n = params.if_contains("name"); n && n->is_string()) name = n->as_string().c_str();
    for (auto& t : tools_) {
      if (t.name != name) continue;
      bj::object args;
      if (auto* a = params.if_contains("arguments"); a && a->is_object()) args = a->as_object();
      std::optional<bj::value> token;
      if (auto* meta = params.if_contains("_meta"); meta && meta->is_object()) {
        if (auto* tok = meta->as_object().if_contains("progressToken")) token = *tok;
      }
      ToolContext ctx(*this, token, bj::serialize(id));
      bj::object result = co_await t.handler(std::move(args), ctx);
      co_return result;
    }
    co_return rpc_error(json::kInvalidParams, "Unknown tool: " + name);
  }
  if (method == "resources/list" || method == "resources/templates/list") {
    const bool templates = method == "resources/templates/list";
    bj::array items;
    for (const auto& r : resources_) {
      if (r.is_template != templates) continue;
      bj::object o{{templates ? "uriTemplate" : "uri", r.uri}, {"name", r.name}};
      if (!r.mime_type.empty()) o["mimeType"] = r.mime_type;
      if (!r.description.empty()) o["description"] = r.description;
      items.push_back(std::move(o));
    }
    co_return page(std::move(items), templates ? "resourceTemplates" : "resources", params,
                   options_.page_size);
  }
  if (method == "resources/read") {
    std::string uri;
    if (auto* u = params.if_contains("uri"); u && u->is_string()) uri = u->as_string().c_str();
    for (const auto& r : resources_) {
      if (!r.is_template && r.uri == uri) co_return r.read(uri);
    }
    for (const auto& r : resources_) {
      if (r.is_template && match_template(r.uri, uri)) co_return r.read(uri);
    }
    co_return rpc_error(-32002, "Resource not found: " + uri);
  }
  if (method == "resources/subscribe" || method == "resources/unsubscribe") co_return bj::object{};
  if (method == "prompts/list") {
    bj::array items;
    for (const auto& p : prompts_) {
      items.push_back(bj::object{
          {"name", p.name}, {"description", p.description}, {"arguments", p.arguments}});
    }
    co_return page(std::move(items), "prompts", params, options_.page_size);
  }
  if (method == "prompts/get") {
    std::string name;
    if (auto* n = params.if_contains("name"); n && n->is_string()) name = n->as_string().c_str();
    for (const auto& p : prompts_) {
      if (p.name != name) continue;
      bj::object args;
      if (auto* a = params.if_contains("arguments"); a && a->is_object()) args = a->as_object();
      co_return p.get(args);
    }
    co_return rpc_error(json::kInvalidParams, "Unknown prompt: " + name);
  }
  if (method == "logging/setLevel") {
    std::string level;
    if (auto* l = params.if_contains("level"); l && l->is_string()) level = l->as_string().c_str();
    const int rank = log_level_rank(level);
    if (rank < 0) co_return rpc_error(json::kInvalidParams, "Unknown logging level: " + level);
    min_log_rank_ = rank;
    co_return bj::object{};
  }
  if (method == "completion/complete") {
    bj::array values;
    if (auto* a = params.if_contains("argument"); a && a->is_object()) {
      if (auto* v = a->as_object().if_contains("value"); v && v->is_string()) {
        for (const char* option : {"alpha", "beta", "gamma"}) {
          if (std::string_view(option).starts_with(v->as_string().c_str())) values.push_back(option);
        }
      }
    }
    co_return bj::object{
        {"completion", bj::object{{"values", values}, {"total", values.size()}, {"hasMore", false}}}};
  }
  co_return rpc_error(json::kMethodNotFound, "Method not found: " + method);
}

}  // namespace toolbridge::mcp
