#include "frontend/event_stream.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace toolbridge::frontend {

namespace asio = boost::asio;

std::string sse_event(std::string_view message) {
  std::string out;
  out.reserve(message.size() + 24);
  out += "event: message\ndata: ";
  out += message;
  out += "\n\n";
  return out;
}

void drain_events(gateway::Channel& channel, std::string& out) {
  while (!channel.queue.empty()) {
    out += "event: message\ndata: ";
    out += channel.pop();
    out += "\n\n";
  }
}

asio::awaitable<bool> pump_events(transport::Exchange& ex, gateway::Channel& channel,
                                  const base::Clock& clock, const PumpOptions& options) {
  bool ok = true;
  auto last_write = clock.now();
  while (ok && !channel.closed && !(options.stop && options.stop())) {
    if (channel.queue.empty()) {
      channel.wake(clock).expires_after(options.poll);
      boost::system::error_code ec;
      co_await channel.wake(clock).async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (!ec && channel.queue.empty()) {
        ok = !ex.peer_closed();
        if (ok && clock.now() - last_write >= options.keepalive) {
          std::string comment = ": keepalive\n\n";
          ok = co_await ex.write_chunk(std::move(comment));
          last_write = clock.now();
        }
        continue;
      }
    }
    std::string chunk;
    drain_events(channel, chunk);
    if (!chunk.empty()) ok = co_await ex.write_chunk(std::move(chunk));
    last_write = clock.now();
    if (options.on_written) options.on_written();
  }
  co_return ok;
}

}  // namespace toolbridge::frontend
