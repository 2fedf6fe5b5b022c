// `toolbridge stdio`: a stdio MCP server that forwards every message to a running gateway over
// Streamable HTTP, so a framework configured with a stdio command switches to the gateway by
// changing only that command. Each message is one POST on a keep-alive connection of its own
// while it runs (calls run concurrently; SSE answers are relayed event by event, so progress and
// server requests arrive while a call runs); a GET stream carries what is tied to no request.
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>
#include <cstdlib>
#include <deque>
#include <functional>
#include <iostream>
#include <limits>
#include <map>

#include "app/commands.h"
#include "base/clock.h"
#include "base/event.h"
#include "base/expected.h"
#include "base/spawn.h"
#include "json/envelope.h"
#include "json/parse.h"
#include "transport/http_client.h"
#include "transport/line_framer.h"
#include "transport/sse_reader.h"
#include "transport/url.h"

namespace toolbridge::app {

namespace {

namespace asio = boost::asio;
namespace http = transport::http;
namespace bj = boost::json;
using OnEvent = std::function<void(std::string)>;

constexpr std::size_t kMaxLine = 64u << 20;
constexpr std::string_view kSeparator = "__";

class Shim {
 public:
  Shim(asio::io_context& io, std::string url_text, transport::Url url, std::string server)
      : io_(io),
        url_text_(std::move(url_text)),
        url_(std::move(url)),
        client_(io.get_executor(), client_options()),
        server_(std::move(server)),
        in_(io, ::dup(STDIN_FILENO)),
        out_(io, ::dup(STDOUT_FILENO)),
        framer_(kMaxLine),
        session_ready_(base::steady_clock()),
        renewed_(base::steady_clock()) {}

  void start() { asio::co_spawn(io_, read_stdin(), base::log_failure("stdio shim stdin read")); }

 private:
  struct Reply {
    int status = 0;
    std::string content_type;
    std::string session_id;
    std::string body;  // non-SSE answers
  };

  asio::awaitable<void> read_stdin() {
    std::vector<char> buf(64 * 1024);
    for (;;) {
      boost::system::error_code ec;
      const std::size_t n = co_await in_.async_read_some(
          asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      const bool ok = framer_.feed(std::string_view(buf.data(), n), [this](std::string_view line) {
        asio::co_spawn(io_, forward(std::string(line)), base::log_failure("stdio shim forward"));
      });
      if (!ok) {
        std::cerr << "toolbridge stdio: a message exceeds " << kMaxLine << " bytes; stopping\n";
        break;
      }
    }
    // The client closed stdin: end the gateway session, then exit.
    if (!session_id_.empty()) {
      Reply r;
      const std::string empty;
      const base::Status ended = co_await exchange(http::verb::delete_, empty, r, nullptr);
      (void)ended;  // exiting either way
      client_.close();
    }
    io_.stop();
  }

  // Sends one client message to the gateway and relays what comes back.
  asio::awaitable<void> forward(std::string message) {
    const json::Envelope env = json::parse_envelope(message);
    if (env.kind == json::Kind::kInvalid) {
      write_out(json::make_error({}, json::kParseError, env.problem));
      co_return;
    }
    const std::string id(env.id.in(message));
    const bool is_initialize = env.kind == json::Kind::kRequest && env.method == "initialize";
    if (!is_initialize && !init_done_) {
      // Everything after initialize waits until the gateway has given us a session.
      co_await session_ready_.wait();
    }
    if (renewing_) {
      co_await renewed_.wait();
    }
    if (env.kind == json::Kind::kRequest) {
      pending_[id] = env.method;
      if (!server_.empty()) message = rename_outgoing(message, env);
    }
    if (is_initialize) init_message_ = message;
    Reply reply;
    const std::string used_session = session_id_;
    base::Status sent = co_await exchange(http::verb::post, message, reply, &relay_event_);
    if (sent && reply.status == 404 && !is_initialize && !used_session.empty()) {
      // The gateway restarted (or dropped the session): open a new session the way the client
      // opened this one, then send the message once more.
      const bool renewed = co_await renew_session(used_session);
      if (renewed) {
        reply = Reply{};
        sent = co_await exchange(http::verb::post, message, reply, &relay_event_);
      }
    }
    if (is_initialize) {
      init_done_ = true;
      session_ready_.notify_all();
      if (sent && !reply.session_id.empty()) {
        session_id_ = reply.session_id;
        asio::co_spawn(io_, listen_get(), base::log_failure("stdio shim GET stream"));
      }
    }
    if (!sent || (reply.status >= 400 && env.kind == json::Kind::kRequest)) {
      if (!sent) {
        std::cerr << "toolbridge stdio: " << sent.error() << "\n";
      }
      if (env.kind == json::Kind::kRequest && pending_.erase(id)) {
        write_out(failure(id, sent ? reply : Reply{}, sent.error()));
      }
      co_return;
    }
    if (!reply.body.empty()) relay(std::move(reply.body));
  }

  // Replays the client's initialize (and initialized) for a new session; one renewal at a time,
  // the others wait for it. True if a session other than `stale` is in use afterwards.
  asio::awaitable<bool> renew_session(std::string stale) {
    if (session_id_ != stale) co_return !session_id_.empty();
    if (renewing_) {
      co_await renewed_.wait();
      co_return !session_id_.empty() && session_id_ != stale;
    }
    renewing_ = true;
    session_id_.clear();
    Reply init;
    const base::Status sent = co_await exchange(http::verb::post, init_message_, init, nullptr);
    if (sent && init.status == 200 && !init.session_id.empty()) {
      session_id_ = init.session_id;
      Reply ack;
      const std::string initialized = json::make_notification("notifications/initialized", {});
      const base::Status acked = co_await exchange(http::verb::post, initialized, ack, nullptr);
      (void)acked;  // the session is open; a lost ack shows on the next call
      asio::co_spawn(io_, listen_get(), base::log_failure("stdio shim GET stream"));
      std::cerr
          << "toolbridge stdio: the gateway no longer knew the session; continuing on a new one\n";
    } else {
      std::cerr << "toolbridge stdio: could not open a new session: "
                << (sent ? "HTTP " + std::to_string(init.status) : sent.error()) << "\n";
    }
    renewing_ = false;
    renewed_.notify_all();
    co_return !session_id_.empty();
  }

  // An error response for request `id` that failed at the HTTP level.
  std::string failure(const std::string& id, const Reply& reply,
                      const std::string& transport_error) {
    if (!transport_error.empty()) {
      return json::make_error(
          id, json::kUpstreamUnavailable,
          "toolbridge stdio: cannot reach the gateway at " + url_text_ + ": " + transport_error);
    }
    // The gateway explains HTTP errors with a JSON-RPC error body: keep its code and message.
    const json::Envelope e = json::parse_envelope(reply.body);
    if (e.kind == json::Kind::kResponse && !e.error.empty()) {
      return json::with_id(reply.body, e.id, id);
    }
    return json::make_error(
        id, json::kInternalError,
        "toolbridge stdio: the gateway answered HTTP " + std::to_string(reply.status));
  }

  // One message from the gateway (a response, notification or server request) to stdout.
  void relay(std::string message) {
    const json::Envelope env = json::parse_envelope(message);
    if (env.kind == json::Kind::kInvalid) return;
    if (env.kind == json::Kind::kResponse) {
      auto it = pending_.find(std::string(env.id.in(message)));
      if (it != pending_.end()) {
        const std::string method = it->second;
        pending_.erase(it);
        if (!server_.empty() && env.error.empty()) message = rename_incoming(message, env, method);
      }
    }
    write_out(std::move(message));
  }

  // --server NAME: the client sees NAME's tools and prompts under their own names.
  std::string rename_outgoing(const std::string& message, const json::Envelope& env) {
    if (env.method != "tools/call" && env.method != "prompts/get") return message;
    boost::system::error_code ec;
    bj::value v = json::parse(message, ec);
    if (ec || !v.is_object()) return message;
    auto* params = v.as_object().if_contains("params");
    if (!params || !params->is_object()) return message;
    auto* name = params->as_object().if_contains("name");
    if (!name || !name->is_string()) return message;
    const auto& names = env.method == "tools/call" ? tool_names_ : prompt_names_;
    const std::string bare(name->as_string());
    auto it = names.find(bare);
    // Before any listing, the gateway's default naming is the best guess.
    *name = it != names.end() ? it->second : server_ + std::string(kSeparator) + bare;
    return bj::serialize(v);
  }

  std::string rename_incoming(const std::string& message, const json::Envelope& env,
                              const std::string& method) {
    const char* key = method == "tools/list"     ? "tools"
                      : method == "prompts/list" ? "prompts"
                                                 : nullptr;
    if (!key) return message;
    boost::system::error_code ec;
    bj::value result = json::parse(env.result.in(message), ec);
    if (ec || !result.is_object()) return message;
    auto* list = result.as_object().if_contains(key);
    if (!list || !list->is_array()) return message;
    // The gateway tags each entry with its server and original name (_meta); without the tags,
    // the prefix of the default naming tells.
    const std::string prefix = server_ + std::string(kSeparator);
    auto& names = method == "tools/list" ? tool_names_ : prompt_names_;
    bj::array kept;
    for (auto& item : list->as_array()) {
      if (!item.is_object()) continue;
      auto& def = item.as_object();
      auto* name = def.if_contains("name");
      if (!name || !name->is_string()) continue;
      const std::string exposed(name->as_string());
      std::string origin_server, original;
      if (const auto* meta = def.if_contains("_meta"); meta && meta->is_object()) {
        const auto* s = meta->as_object().if_contains("toolbridge/server");
        const auto* n = meta->as_object().if_contains("toolbridge/name");
        if (s && s->is_string() && n && n->is_string()) {
          origin_server = std::string(s->as_string());
          original = std::string(n->as_string());
        }
      }
      if (origin_server.empty() && exposed.starts_with(prefix)) {
        origin_server = server_;
        original = exposed.substr(prefix.size());
      }
      if (origin_server != server_) continue;
      names[original] = exposed;
      *name = original;
      kept.push_back(std::move(item));
    }
    *list = std::move(kept);
    return json::make_result(env.id.in(message), bj::serialize(result));
  }

  // The session's GET stream: list changes and server requests tied to no call.
  asio::awaitable<void> listen_get() {
    Reply reply;
    const std::string empty;
    const base::Status listened = co_await exchange(http::verb::get, empty, reply, &relay_event_);
    (void)listened;  // the stream ends with the session
  }

  static transport::HttpClientOptions client_options() {
    transport::HttpClientOptions o;
    // Every call of the client runs at once, as it did when each had its own connection.
    o.max_connections = std::numeric_limits<std::size_t>::max();
    o.user_agent = "toolbridge-stdio";
    return o;
  }

  // One HTTP exchange. SSE events go to `on_event` as they arrive; any other body is returned
  // whole. Fails on a transport failure.
  asio::awaitable<base::Status> exchange(http::verb verb, const std::string& body, Reply& reply,
                                         const OnEvent* on_event) {
    transport::HttpRequest req;
    req.verb = verb;
    req.url = url_;
    const bool get = verb == http::verb::get;
    req.headers.emplace_back("Accept",
                             get ? "text/event-stream" : "application/json, text/event-stream");
    if (verb == http::verb::post) req.headers.emplace_back("Content-Type", "application/json");
    if (!session_id_.empty()) req.headers.emplace_back("Mcp-Session-Id", session_id_);
    // A gateway with API keys (gateway.auth): the key from the environment, never a flag.
    if (const char* token = std::getenv("TOOLBRIDGE_TOKEN"); token && *token)
      req.headers.emplace_back("Authorization", std::string("Bearer ") + token);
    req.body = body;
    // The GET stream lives as long as the session, outside the pool; the gateway bounds every
    // call by its own deadline, and streams may be quiet for long: no limit on reading.
    req.lease = get ? transport::Lease::kOwn : transport::Lease::kPooled;
    req.header_timeout = transport::kNoTimeout;
    req.body_timeout = transport::kNoTimeout;
    transport::HttpExchange ex = co_await client_.send(req);
    co_await ex.read_header();  // false at once if send failed
    if (ex.failed()) co_return base::fail(ex.error().message);
    reply.status = ex.status();
    reply.content_type = ex.header("Content-Type");
    reply.session_id = ex.header("Mcp-Session-Id");
    const bool sse = reply.content_type.find("text/event-stream") != std::string::npos;
    transport::SseReader events;
    while (!ex.done()) {
      // read_some, not a whole read: an SSE event must be relayed when it arrives.
      const std::string_view got = co_await ex.read_some();
      if (ex.failed()) break;  // the gateway closed the stream; what arrived has been relayed
      if (sse && on_event) {
        events.feed(got, *on_event);
      } else {
        reply.body.append(got);
      }
    }
    co_return base::Status{};
  }

  void write_out(std::string message) {
    message.push_back('\n');
    out_queue_.push_back(std::move(message));
    if (writing_) return;
    writing_ = true;
    asio::co_spawn(
        io_,
        [this]() -> asio::awaitable<void> {
          while (!out_queue_.empty()) {
            std::string batch;
            while (!out_queue_.empty()) {
              batch += out_queue_.front();
              out_queue_.pop_front();
            }
            boost::system::error_code ec;
            co_await asio::async_write(out_, asio::buffer(batch),
                                       asio::redirect_error(asio::use_awaitable, ec));
            if (ec) io_.stop();  // the client is gone
          }
          writing_ = false;
        },
        base::log_failure("stdio shim"));
  }

  asio::io_context& io_;
  std::string url_text_;  // as the user gave it, for messages
  transport::Url url_;
  transport::HttpClient client_;
  const OnEvent relay_event_ = [this](std::string event) { relay(std::move(event)); };
  std::string server_;
  asio::posix::stream_descriptor in_;
  asio::posix::stream_descriptor out_;
  transport::LineFramer framer_;
  std::deque<std::string> out_queue_;
  bool writing_ = false;
  std::string session_id_;
  bool init_done_ = false;  // initialize answered (or failed): later messages may go
  base::Event session_ready_;  // notified when initialize has its answer
  std::string init_message_;  // replayed when the gateway has lost the session
  bool renewing_ = false;
  base::Event renewed_;                         // notified when a renewal ends
  std::map<std::string, std::string> pending_;  // request id (raw JSON) -> method
  // --server: the server's own names -> the gateway's, from the last listing.
  std::map<std::string, std::string> tool_names_, prompt_names_;
};

}  // namespace

int run_stdio_shim(const std::string& url, const std::string& server) {
  auto parsed = transport::parse_url(url);
  if (!parsed) {
    std::cerr << "toolbridge stdio: " << parsed.error() << "\n";
    return 2;
  }
  asio::io_context io(1);
  Shim shim(io, url, *parsed, server);
  shim.start();
  io.run();
  return 0;
}

}  // namespace toolbridge::app
