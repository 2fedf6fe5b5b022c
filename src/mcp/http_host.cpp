#include "mcp/http_host.h"


#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <deque>

#include "json/envelope.h"
#include "transport/session_id.h"
#include "transport/local_origin.h"

namespace toolbridge::mcp {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using transport::Exchange;
using transport::Headers;

// Messages for one HTTP response (a POST's answer or the GET stream), drained by its coroutine.
struct HttpHost::Stream {
  explicit Stream(asio::io_context& io) : wake(io, asio::steady_timer::time_point::max()) {}
  void push(std::string message, bool last) {
    queue.push_back(std::move(message));
    done = done || last;
    wake.cancel();
  }
  std::deque<std::string> queue;
  bool done = false;    // the request's own response is the last queued message
  bool closed = false;  // the HTTP exchange ended: nothing more is read from here
  asio::steady_timer wake;
};

struct HttpHost::Session {
  std::string id;
  std::unique_ptr<Server> server;
  std::map<std::string, std::shared_ptr<Stream>, std::less<>> by_request;  // raw JSON id
  std::shared_ptr<Stream> get_stream;
};

namespace {

std::string header(const transport::Request& req, std::string_view name) {
  auto it = req.find(name);
  return it == req.end() ? std::string() : std::string(it->value());
}

std::string sse_event(std::string_view message) {
  std::string out = "event: message\ndata: ";
  out += message;
  out += "\n\n";
  return out;
}

std::string error_body(int code, std::string_view message) {
  return json::make_error({}, code, message);
}

}  // namespace

HttpHost::HttpHost(asio::io_context& io, transport::HttpServerOptions options,
                   ServerFactory factory)
    : io_(io),
      factory_(std::move(factory)),
      http_(io, options, [this](Exchange& ex) { return handle(ex); }),
      loopback_(transport::is_loopback_address(options.host)) {}

HttpHost::~HttpHost() = default;

std::string HttpHost::listen() {
  return http_.listen();
}

std::shared_ptr<HttpHost::Session> HttpHost::new_session() {
  auto s = std::make_shared<Session>();
  s->id = transport::random_session_id();
  s->server = factory_();
  Session* raw = s.get();
  s->server->set_outbox([raw](std::string message, const std::string& related, bool final) {
    if (auto it = raw->by_request.find(related); !related.empty() && it != raw->by_request.end()) {
      auto stream = it->second;
      if (final) raw->by_request.erase(it);
      if (!stream->closed) {
        stream->push(std::move(message), final);
        return;
      }
    }
    // Not tied to an open POST: the GET stream, if the client keeps one (else it is dropped).
    if (raw->get_stream && !raw->get_stream->closed)
      raw->get_stream->push(std::move(message), false);
  });
  sessions_.emplace(s->id, s);
  return s;
}

asio::awaitable<void> HttpHost::handle(Exchange& ex) {
  const auto& req = ex.request();
  const std::string_view target(req.target().data(), req.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  if (path != "/mcp") {
    co_await ex.reply(http::status::not_found, "text/plain",
                      std::string("not found; MCP is served at /mcp\n"), {});
    co_return;
  }
  // DNS rebinding: on loopback, Host and Origin must both name this machine.
  const std::string host = header(req, "Host");
  const std::string origin = header(req, "Origin");
  if (loopback_ && ((!host.empty() && !transport::is_loopback_host(host)) ||
                    (!origin.empty() && !transport::is_loopback_origin(origin)))) {
    co_await ex.reply(
        http::status::forbidden, "application/json",
        error_body(json::kInvalidRequest, "Forbidden: Host '" + host + "' / Origin '" + origin +
                                              "' is not a loopback name"),
        {});
    co_return;
  }
  if (req.method() == http::verb::post) {
    co_await handle_post(ex);
    co_return;
  }
  const std::string sid = header(req, "Mcp-Session-Id");
  auto it = sessions_.find(sid);
  if (req.method() != http::verb::get && req.method() != http::verb::delete_) {
    const Headers allow{{"Allow", "GET, POST, DELETE"}};
    co_await ex.reply(http::status::method_not_allowed, "application/json",
                      error_body(json::kInvalidRequest, "Method not allowed on /mcp"), allow);
    co_return;
  }
  if (it == sessions_.end()) {
    const std::string answer = error_body(
        json::kInvalidRequest,
        sid.empty() ? "Mcp-Session-Id header is required" : "Session not found");
    co_await ex.reply(sid.empty() ? http::status::bad_request : http::status::not_found,
                      "application/json", answer, {});
    co_return;
  }
  auto session = it->second;
  if (req.method() == http::verb::delete_) {
    sessions_.erase(it);
    if (session->get_stream) {
      session->get_stream->closed = true;
      session->get_stream->wake.cancel();
    }
    ended_.push_back(std::move(session));
    co_await ex.reply(http::status::ok, "application/json", std::string("{}"), {});
    co_return;
  }
  co_await handle_get(ex, std::move(session));
}

asio::awaitable<void> HttpHost::handle_post(Exchange& ex) {
  const auto& req = ex.request();
  const std::string& body = req.body();
  if (json::is_batch(body)) {
    co_await ex.reply(http::status::bad_request, "application/json",
                      error_body(json::kInvalidRequest, "JSON-RPC batches are not supported"), {});
    co_return;
  }
  const json::Envelope env = json::parse_envelope(body);
  if (env.kind == json::Kind::kInvalid) {
    const bool parse = env.problem.starts_with("not JSON");
    const std::string answer =
        error_body(parse ? json::kParseError : json::kInvalidRequest, env.problem);
    co_await ex.reply(http::status::bad_request, "application/json", answer, {});
    co_return;
  }
  const std::string version = header(req, "MCP-Protocol-Version");
  if (!version.empty() && !parse_version(version)) {
    co_await ex.reply(
        http::status::bad_request, "application/json",
        error_body(json::kInvalidRequest, "Unsupported MCP-Protocol-Version '" + version + "'"),
        {});
    co_return;
  }
  std::shared_ptr<Session> session;
  Headers headers;
  if (env.kind == json::Kind::kRequest && env.method == "initialize") {
    session = new_session();
    headers.emplace_back("Mcp-Session-Id", session->id);
  } else {
    const std::string sid = header(req, "Mcp-Session-Id");
    auto it = sessions_.find(sid);
    if (it == sessions_.end()) {
      const std::string answer =
          error_body(json::kInvalidRequest,
                     sid.empty() ? "Mcp-Session-Id header is required (initialize first)"
                                 : "Session not found");
      co_await ex.reply(sid.empty() ? http::status::bad_request : http::status::not_found,
                        "application/json", answer, {});
      co_return;
    }
    session = it->second;
  }
  if (env.kind != json::Kind::kRequest) {
    session->server->receive(body);
    co_await ex.reply(http::status::accepted, "", std::string(), headers);
    co_return;
  }
  const std::string id(env.id.in(body));
  if (session->by_request.contains(id)) {
    co_await ex.reply(
        http::status::bad_request, "application/json",
        json::make_error(id, json::kInvalidRequest, "a request with this id is in progress"),
        headers);
    co_return;
  }
  auto stream = std::make_shared<Stream>(io_);
  session->by_request[id] = stream;
  session->server->receive(body);
  const bool accepts_sse = header(req, "Accept").find("text/event-stream") != std::string::npos;
  co_await stream_answer(ex, stream, accepts_sse, headers);
}

asio::awaitable<void> HttpHost::stream_answer(Exchange& ex, std::shared_ptr<Stream> stream,
                                              bool accepts_sse, const Headers& headers) {
  // Plain JSON when the response comes before anything else; SSE as soon as a notification or a
  // server request has to go out first.
  bool streaming = false;
  for (;;) {
    if (!streaming && (!accepts_sse || (stream->done && stream->queue.size() == 1))) {
      if (stream->done) {
        co_await ex.reply(http::status::ok, "application/json", std::move(stream->queue.back()),
                          headers);
        break;
      }
      stream->queue.clear();  // a client without SSE gets only the response
    } else if (!stream->queue.empty()) {
      if (!streaming) {
        const bool began = co_await ex.begin_stream(http::status::ok, "text/event-stream", headers);
        if (!began) break;
        streaming = true;
      }
      std::string chunk;
      while (!stream->queue.empty()) {
        chunk += sse_event(stream->queue.front());
        stream->queue.pop_front();
      }
      const bool written = co_await ex.write_chunk(std::move(chunk));
      if (!written) break;
      if (stream->done) {
        co_await ex.end_stream();
        break;
      }
    }
    stream->wake.expires_at(asio::steady_timer::time_point::max());
    boost::system::error_code ec;
    co_await stream->wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  stream->closed = true;
}

asio::awaitable<void> HttpHost::handle_get(Exchange& ex, std::shared_ptr<Session> session) {
  if (header(ex.request(), "Accept").find("text/event-stream") == std::string::npos) {
    co_await ex.reply(http::status::not_acceptable, "application/json",
                      error_body(json::kInvalidRequest, "GET /mcp needs Accept: text/event-stream"),
                      {});
    co_return;
  }
  if (session->get_stream) {
    session->get_stream->closed = true;
    session->get_stream->wake.cancel();
  }
  auto stream = std::make_shared<Stream>(io_);
  session->get_stream = stream;
  bool ok = co_await ex.begin_stream(http::status::ok, "text/event-stream", {});
  if (ok) ok = co_await ex.write_chunk(": stream open\n\n");
  while (ok && !stream->closed) {
    if (stream->queue.empty()) {
      stream->wake.expires_after(std::chrono::seconds(15));
      boost::system::error_code ec;
      co_await stream->wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (!ec && stream->queue.empty()) {
        ok = !ex.peer_closed();
        if (ok) ok = co_await ex.write_chunk(": keepalive\n\n");
        continue;
      }
    }
    std::string chunk;
    while (!stream->queue.empty()) {
      chunk += sse_event(stream->queue.front());
      stream->queue.pop_front();
    }
    if (!chunk.empty()) ok = co_await ex.write_chunk(std::move(chunk));
  }
  if (ok) co_await ex.end_stream();
  stream->closed = true;
  if (session->get_stream == stream) session->get_stream.reset();
}

}  // namespace toolbridge::mcp
