#pragma once
// The one SSE writer: frames JSON-RPC messages as `message` events and pumps a session's
// Channel into an open text/event-stream response, with keep-alives.
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "gateway/session.h"
#include "transport/http_server.h"

namespace toolbridge::frontend {

// `event: message` + `data: MESSAGE`.
std::string sse_event(std::string_view message);
// Appends every queued message of `channel` to `out` as events.
void drain_events(gateway::Channel& channel, std::string& out);

struct PumpOptions {
  // How often an idle stream checks whether the client hung up, and how often it sends a
  // keep-alive comment (which also detects a client that went away without closing).
  std::chrono::milliseconds poll{15'000};
  std::chrono::milliseconds keepalive{15'000};
  std::function<bool()> stop;        // true: end the stream
  std::function<void()> on_written;  // after each write (the session is alive)
};

// Writes the channel's events to the begun stream until the channel closes, a write fails or
// stop() says so; `clock` times the polls and keep-alives. Returns false if the connection broke
// (no end_stream is owed).
boost::asio::awaitable<bool> pump_events(transport::Exchange& ex, gateway::Channel& channel,
                                         const base::Clock& clock, const PumpOptions& options);

}  // namespace toolbridge::frontend
