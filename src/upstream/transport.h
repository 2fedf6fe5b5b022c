#pragma once
// How an instance's JSON-RPC messages reach its server and come back: a child's stdio pipes
// (stdio_transport) or HTTP (remote). Instance keeps the MCP session (pending table, id
// rewriting, handshake) and talks to its server only through this.
#include <sys/types.h>

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/expected.h"

namespace toolbridge::upstream {

class Transport {
 public:
  struct Handlers {
    std::function<void(std::string_view message)> on_message;  // one JSON-RPC message
    std::function<void(std::uint64_t call_id)> on_sent;  // a forwarded call reached the server
    // The server is gone or unusable (exit, broken pipe, unreachable), with the reason; called
    // at most once, never after stop() began or abort().
    std::function<void(const std::string& reason)> on_failure;
    // The answer to one request (`id`, its raw JSON id) is lost, the transport still usable (an
    // HTTP exchange failed): the server may or may not have run it.
    std::function<void(std::string_view id, const std::string& reason)> on_lost_answer;
  };

  virtual ~Transport() = default;
  // Starts it: spawns the child, or checks the URL and loads certificates; or says why not.
  virtual base::Status open() = 0;
  // Queues one message (without a line end); messages go out in order. `call_id` is non-zero
  // for a forwarded call, so on_sent can tell which requests the server may have seen.
  virtual void send(std::string message, std::uint64_t call_id) = 0;
  // Whether a new call may be sent now; if not (a server that does not read what it is sent),
  // why, in words that follow "server 'NAME' ".
  virtual base::Status congestion() const { return {}; }
  // The protocol version initialize settled on (HTTP sends it with every request).
  virtual void set_protocol_version(std::string) {}
  // The server speaks the stateless revision `version` (2026-07-28): every request carries the
  // envelope and the routing headers, and there is no session.
  virtual void set_stateless(std::string /*version*/) {}
  // Orderly end, each step bounded by the server's stop_grace; no handler is called after it
  // begins.
  virtual boost::asio::awaitable<void> stop() = 0;
  // At once, after a failure: kills the process group or closes the connections.
  virtual void abort() = 0;
  virtual pid_t pid() const { return 0; }  // 0 for a remote server
};

}  // namespace toolbridge::upstream
