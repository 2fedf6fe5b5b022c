#pragma once
// The transport of a remote instance: JSON-RPC messages over Streamable HTTP (each message a
// POST; answers as a JSON body or SSE events; server-initiated messages on a GET stream), or the
// legacy HTTP+SSE transport (one GET stream, POSTs to the endpoint it names). Messages received
// go to the same line handler the stdio reader feeds, so the MCP session logic stays in Instance.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "config/config.h"
#include "upstream/stateless.h"
#include "transport/http_client.h"
#include "transport/sse_reader.h"
#include "upstream/transport.h"

namespace toolbridge::upstream {

class Remote : public Transport, public std::enable_shared_from_this<Remote> {
 public:
  Remote(boost::asio::io_context& io, const base::Clock& clock, const config::Server& server,
         Handlers handlers);
  ~Remote() override;

  // Checks the URL and loads the trusted certificates, or says why it cannot.
  base::Status open() override;
  // Queues one message; messages are written in order.
  void send(std::string message, std::uint64_t call_id) override;
  // Called once initialize is answered: later requests carry MCP-Protocol-Version, and the
  // optional GET stream for server-initiated messages is opened.
  void set_protocol_version(std::string version) override;
  // 2026-07-28 (src/upstream/stateless.h): envelopes and routing headers, no session, no GET.
  void set_stateless(std::string version) override;
  // Ends the session (DELETE), closes every connection and waits, bounded by stop_grace, for
  // the aborted reads and writes to finish.
  boost::asio::awaitable<void> stop() override;
  void abort() override { close(); }
  // Streamable HTTP: tells the server the session is over (DELETE with Mcp-Session-Id), bounded
  // by `limit`; errors are ignored (the server expires sessions on its own too).
  boost::asio::awaitable<void> end_session(std::chrono::milliseconds limit);
  // Closes every connection; no handler is called afterwards.
  void close();
  // Coroutines still running (they end soon after close()); stop() waits for 0 so none is left
  // for the io_context's destructor to tear down.
  // "streamable_http" or "sse" once known.
  std::string transport_name() const;

 private:
  struct Outgoing {
    std::string body;
    std::uint64_t call_id = 0;
    std::string id;  // raw JSON id when it is a request, else empty
    bool initialize = false;
    bool stateless = false;  // 2026-07-28: the envelope is in the body; these name it in headers
    std::string method;
    std::string name;
  };
  enum class Mode { kProbing, kStreamable, kLegacy };
  // What a body ended with: an error (empty if none) and whether it broke max_line_bytes.
  struct BodyEnd {
    std::string error;
    bool too_long = false;
  };

  boost::asio::awaitable<void> send_loop();
  // A POST's answer as read: what conclude() decides on.
  struct Answer {
    int status = 0;
    std::string reason;
    bool sse = false;
    bool json_body = false;
    std::string body;  // JSON or an error's text; SSE events are delivered as they arrive
    BodyEnd end;
    bool answered = false;  // an event answered the request
    std::string last_event_id;
    long retry_ms = -1;
  };

  boost::asio::awaitable<void> read_response(transport::HttpExchange ex, Outgoing m);
  // Acts on a POST's answer: errors, the legacy fallback, JSON messages, a stream to resume.
  void conclude(Outgoing m, const Answer& a);
  // GET stream: server-initiated messages (awaiting empty), or the resumption of a POST's
  // stream with Last-Event-ID until `awaiting` is answered.
  boost::asio::awaitable<void> get_stream(std::string last_event_id, long retry_ms,
                                          std::string awaiting);
  boost::asio::awaitable<void> legacy_stream();
  // Reads an SSE body to its end, giving `on_event` each event; stops early when it returns
  // false.
  using EventHandler = std::function<bool(std::string_view type, std::string data)>;
  boost::asio::awaitable<BodyEnd> read_events(transport::HttpExchange& ex,
                                              transport::SseReader& events,
                                              const EventHandler& on_event);
  // An event of the legacy stream: `endpoint` names where messages are POSTed (a failure when it
  // is not a URL on the stream's origin), a message goes to the line handler.
  base::Status on_legacy_event(std::string_view type, std::string data);
  transport::HttpRequest request(transport::http::verb verb, const transport::Url& to) const;
  void spawn_send_loop();
  void deliver(std::string_view message);
  void fail(const std::string& reason);
  void answer_error(const Outgoing& m, const std::string& message);
  // A transport failure in the words remote upstreams have always used.
  std::string describe(const transport::HttpError& e) const;
  std::string where() const;

  boost::asio::io_context& io_;
  const base::Clock& clock_;
  const config::Server server_;  // a copy: coroutines may outlive the Instance
  Handlers handlers_;
  transport::HttpClient client_;
  transport::Url base_;         // the configured URL
  transport::Url legacy_post_;  // legacy: the endpoint the stream named
  Mode mode_ = Mode::kProbing;
  std::string session_id_;
  std::string protocol_version_;
  std::deque<Outgoing> queue_;
  bool sending_ = false;
  bool stateless_ = false;
  HeaderMarks header_marks_;  // SEP-2243: learnt from the tools/list results passing through
  bool closed_ = false;
  bool failed_ = false;
  std::size_t running_ = 0;
  struct Running {
    explicit Running(Remote& r) : r(r) { ++r.running_; }
    ~Running() { --r.running_; }
    Remote& r;
  };
  base::Timer endpoint_known_;  // legacy: cancelled when `endpoint` arrives
};

}  // namespace toolbridge::upstream
