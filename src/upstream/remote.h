#pragma once
// The transport of a remote instance: JSON-RPC messages over Streamable HTTP (each message a
// POST; answers as a JSON body or SSE events; server-initiated messages on a GET stream), or the
// legacy HTTP+SSE transport (one GET stream, POSTs to the endpoint it names). Messages received
// go to the same line handler the stdio reader feeds, so the MCP session logic stays in Instance.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"

namespace toolbridge::upstream {

class Remote : public std::enable_shared_from_this<Remote> {
 public:
  struct Handlers {
    std::function<void(std::string_view message)> on_message;  // one JSON-RPC message
    std::function<void(std::uint64_t call_id)> on_sent;  // a forwarded call reached the server
    std::function<void(const std::string& reason)> on_failure;  // the server is unreachable
  };

  Remote(boost::asio::io_context& io, const config::Server& server, Handlers handlers);
  ~Remote();

  // Checks the URL and prepares TLS. Returns an error message, empty on success.
  std::string open();
  // Queues one message; messages are written in order. `call_id` as in Instance::write.
  void send(std::string message, std::uint64_t call_id);
  // Called once initialize is answered: later requests carry MCP-Protocol-Version, and the
  // optional GET stream for server-initiated messages is opened.
  void set_protocol_version(std::string version);
  // Streamable HTTP: tells the server the session is over (DELETE with Mcp-Session-Id), bounded
  // by `limit`; errors are ignored (the server expires sessions on its own too).
  boost::asio::awaitable<void> end_session(std::chrono::milliseconds limit);
  // Closes every connection; no handler is called afterwards.
  void close();
  // Coroutines still running (they end soon after close()); stop() waits for 0 so none is left
  // for the io_context's destructor to tear down.
  std::size_t running() const { return running_; }
  // "streamable_http" or "sse" once known.
  std::string transport_name() const;

  struct Conn;  // one keep-alive connection, plain or TLS

 private:
  struct Outgoing {
    std::string body;
    std::uint64_t call_id = 0;
    std::string id;  // raw JSON id when it is a request, else empty
    bool initialize = false;
    bool retried = false;  // already resent once after a stale keep-alive connection
    bool reused = false;   // went out on a connection that had served a request before
  };
  struct Target {
    std::string host, port, target;
  };
  enum class Mode { kProbing, kStreamable, kLegacy };

  boost::asio::awaitable<void> send_loop();
  boost::asio::awaitable<std::shared_ptr<Conn>> acquire(std::string& error, bool& reused);
  boost::asio::awaitable<std::shared_ptr<Conn>> connect(std::string& error);
  void release(const std::shared_ptr<Conn>& c, bool reusable);
  boost::asio::awaitable<void> read_response(std::shared_ptr<Conn> c, Outgoing m);
  // GET stream: server-initiated messages (awaiting empty), or the resumption of a POST's
  // stream with Last-Event-ID until `awaiting` is answered.
  boost::asio::awaitable<void> get_stream(std::string last_event_id, long retry_ms,
                                          std::string awaiting);
  boost::asio::awaitable<void> legacy_stream();
  void deliver(std::string_view message);
  void fail(const std::string& reason);
  void answer_error(const Outgoing& m, const std::string& message);
  std::string where() const;

  boost::asio::io_context& io_;
  const config::Server server_;  // a copy: coroutines may outlive the Instance
  Handlers handlers_;
  bool tls_ = false;
  std::unique_ptr<boost::asio::ssl::context> ssl_;
  Target base_;         // the configured URL
  Target legacy_post_;  // legacy: the endpoint the stream named
  Mode mode_ = Mode::kProbing;
  std::string session_id_;
  std::string protocol_version_;
  std::deque<Outgoing> queue_;
  bool sending_ = false;
  bool closed_ = false;
  bool failed_ = false;
  std::size_t active_ = 0;  // connections busy with a POST
  std::size_t running_ = 0;
  struct Running {
    explicit Running(Remote& r) : r(r) { ++r.running_; }
    ~Running() { --r.running_; }
    Remote& r;
  };
  std::vector<std::shared_ptr<Conn>> idle_;
  std::vector<std::weak_ptr<Conn>> live_;
  boost::asio::steady_timer slot_free_;       // cancelled when a connection is released
  boost::asio::steady_timer endpoint_known_;  // legacy: cancelled when `endpoint` arrives
};

}  // namespace toolbridge::upstream
