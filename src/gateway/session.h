#pragma once
// A downstream MCP session (one agent trajectory): negotiated version and capabilities, the
// streams that carry messages to it, and the requests it has in flight.
#include <boost/asio/io_context.hpp>
#include <boost/container/deque.hpp>
#include <boost/container/flat_map.hpp>
#include <boost/container/small_vector.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "base/clock.h"
#include "call/call.h"
#include "mcp/protocol.h"
#include "upstream/instance.h"

namespace toolbridge::gateway {

// Messages waiting to be written to one HTTP response stream (a POST's SSE answer or the GET
// stream). Producers push; the connection coroutine waits on wake() and drains.
class Channel {
 public:
  // A client that stops reading must not grow the gateway without bound: past this many queued
  // bytes its stream is closed (it can reconnect; the spec allows dropping undelivered events).
  static constexpr std::size_t kMaxQueuedBytes = 16u << 20;

  explicit Channel(boost::asio::io_context& io) : io_(io) {}
  // The timer a writer waits on (made at first use: most POSTs never wait, and making a timer
  // looks up the timer service under a lock), on the clock of the first caller. notify()
  // cancels a wait.
  base::Timer& wake(const base::Clock& clock) {
    if (!wake_) wake_.emplace(io_, clock);
    return *wake_;
  }
  void notify() {
    if (wake_) wake_->cancel();
  }
  void push(std::string message) {
    if (closed) return;
    queued_bytes += message.size();
    if (queued_bytes > kMaxQueuedBytes) {
      overflowed = true;
      queue.clear();
      close();
      return;
    }
    queue.push_back(std::move(message));
    notify();
  }
  std::string pop() {
    std::string m = std::move(queue.front());
    queue.pop_front();
    queued_bytes -= m.size();
    return m;
  }
  void close() {
    closed = true;
    notify();
  }
  // boost's deque allocates nothing until the first push (std::deque allocates when built, and a
  // Channel is built for every POST).
  boost::container::deque<std::string> queue;
  std::size_t queued_bytes = 0;
  bool overflowed = false;
  bool closed = false;

 private:
  boost::asio::io_context& io_;
  std::optional<base::Timer> wake_;
};

class Session;

// The answer to one POST: its requests' responses plus whatever the servers send on their
// behalf meanwhile. It is the Events of every call the POST runs.
class PostStream : public upstream::CallSink, public std::enable_shared_from_this<PostStream> {
 public:
  PostStream(boost::asio::io_context& io, std::weak_ptr<Session> session, bool can_stream)
      : channel(io), session_(std::move(session)), can_stream_(can_stream) {}

  void on_response(std::string message) override;
  void on_notification(std::string message) override;
  void on_server_request(const std::string& method, std::string params, Reply reply) override;

  // Responses still owed to this POST (calls in flight).
  std::size_t outstanding = 0;
  // Collected in arrival order; one inline (a POST is mostly one call), more for a batch.
  boost::container::small_vector<std::string, 1> responses;
  Channel channel;  // events (notifications, server requests) + wake-ups
  bool finished() const { return outstanding == 0; }
  bool can_stream() const { return can_stream_; }
  // Set once the HTTP exchange has ended; late messages go to the session's GET stream.
  bool detached = false;
  // The POST's `traceparent` header (validated; empty if none): its calls carry it on.
  std::string traceparent;
  // Set while the POST's own coroutine runs its call (McpHttp::post) instead of writing events:
  // the first event queued for the client (a notification, a server's request) calls it, once,
  // so that something writes them out while the call runs.
  std::function<void()> on_first_event;

 private:
  std::weak_ptr<Session> session_;
  bool can_stream_;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  using Clock = base::Clock;
  Session(boost::asio::io_context& /*io*/, std::string id, std::string client = {})
      : id_(std::move(id)), client_(std::move(client)) {}

  const std::string& id() const { return id_; }
  // The client's IP address (sessions are bounded per client).
  const std::string& client() const { return client_; }
  // Who may use and release the trajectories this session names: its tenant if the client gave
  // one (X-Toolbridge-Tenant), else its address. Set by the front end that opened it.
  std::string owner;
  // The API key that opened it (null: authentication off); only requests with the same key
  // may use it, and its allowlist filters the lists and calls.
  const config::ApiKey* principal = nullptr;
  // The trajectory the client named by URL (/t/NAME/mcp) or X-Toolbridge-Trajectory when it
  // opened the session: every call of the session belongs to it. Empty: each call's
  // _meta["toolbridge/session"], else the session itself.
  std::string trajectory;
  // The tool surface the client named by URL (/s/NAME/mcp) or X-Toolbridge-Surface when it
  // opened the session: its tools/list and tools/call are the surface's. Empty: the catalog.
  std::string surface;
  // Nothing in flight and no open stream: closing it loses no answer.
  bool idle() const { return in_flight.empty() && !(get_stream && !get_stream->closed); }
  mcp::Version version = mcp::kLatestVersion;
  // Whether its front end serves the 2025-11-25 tasks methods (initialize offers the capability
  // only then): Streamable HTTP does, the legacy SSE transport does not.
  bool serves_tasks = true;
  mcp::ClientCapabilities caps;
  bool initialized = false;
  int min_log_rank = 0;
  Clock::time_point last_seen{};  // set from the gateway's clock when made and when used

  // The open GET stream, if any; messages not tied to a POST go there.
  std::shared_ptr<Channel> get_stream;
  // Sends a message on the GET stream; false if there is none.
  bool push_unsolicited(std::string message);

  // Requests the gateway sent to this client on a server's behalf, awaiting the client's answer.
  static constexpr std::size_t kMaxOutbound = 64;  // unanswered requests kept per session
  std::int64_t register_outbound(upstream::CallSink::Reply reply);
  bool answer_outbound(std::string_view id_text, bool is_error, std::string raw);
  void fail_all_outbound(const std::string& why);

  // Calls in flight, by the client's raw request id, for notifications/cancelled. A flat map:
  // a session mostly has one or a few, and its vector is reused from call to call.
  struct InFlight {
    std::weak_ptr<call::Call> call;
    std::weak_ptr<PostStream> stream;  // the POST that owes the answer
  };
  boost::container::flat_map<std::string, InFlight, std::less<>> in_flight;

 private:
  std::string id_;
  std::string client_;
  std::int64_t next_outbound_ = 1;
  std::map<std::int64_t, upstream::CallSink::Reply> outbound_;
};

}  // namespace toolbridge::gateway
