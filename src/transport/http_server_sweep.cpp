// HttpServer's periodic sweep: idle and write timeouts, clients that hung up mid-call, stalled
// writers over the unread-bytes bounds, and memory given back after a flood. One pass over the
// connections instead of a timer operation per request.
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "transport/http_server.h"
#include "transport/http_server_connection.h"
#include "transport/tcp_progress.h"

namespace toolbridge::transport {

namespace asio = boost::asio;

void HttpServer::schedule_sweep() {
  // Often enough that each timeout holds to within a quarter of itself.
  const auto shortest = std::min(options_.idle_timeout, options_.write_timeout);
  const auto interval = std::clamp<std::chrono::milliseconds>(
      shortest / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  sweep_timer_.expires_after(interval);
  sweep_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopping_) return;
    sweep();
    schedule_sweep();
  });
}

void HttpServer::sweep() {
  const auto previous = now_;
  now_ = SweepClock::now();
  // What the writes aborted at the last sweep held (freed since) goes back to the system now,
  // not at the end of the next flood.
  if (std::exchange(trim_, false)) ::malloc_trim(0);
  std::vector<std::function<void()>> closed_peers;
  std::vector<Connection*> writing;
  for (auto* c : open_) {
    if (!c->socket.is_open()) continue;
    const auto elapsed = now_ - c->since;
    if (c->phase == Connection::Phase::kWriting && c->unsent > 0 &&
        elapsed <= options_.write_timeout && stalled(*c)) {
      writing.push_back(c);
    }
    if (c->phase == Connection::Phase::kWaiting && elapsed > options_.idle_timeout) {
      ++counters_.idle_closed;
      c->close();
    } else if (c->phase == Connection::Phase::kWriting && elapsed > options_.write_timeout) {
      ++counters_.write_timeouts;
      trim_ = true;
      spdlog::debug("closing a connection from {}: the client did not read its answer for {} ms",
                    c->client, options_.write_timeout.count());
      c->abort();
    } else if (c->phase == Connection::Phase::kHandling && c->on_peer_closed &&
               c->since < previous) {
      // Handled for at least one sweep: did the client hang up meanwhile?
      char byte;
      const ssize_t n = ::recv(c->socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        closed_peers.push_back(std::move(c->on_peer_closed));
        c->on_peer_closed = nullptr;
      }
    }
  }
  // Run outside the loop: a callback may end handlers and so change open_.
  for (auto& callback : closed_peers) asio::post(io_, std::move(callback));
  bound_unread(writing);
  give_back_after_flood();
}

bool HttpServer::stalled(Connection& conn) {
  const auto acked = bytes_acked(conn.socket.native_handle());
  if (!acked) return true;  // no count: the write's age alone decides, as before
  const bool moved = *acked != conn.acked;
  conn.acked = *acked;
  return !moved;
}

void HttpServer::bound_unread(std::vector<Connection*>& writing) {
  std::size_t total = 0;
  std::unordered_map<std::string_view, std::size_t> per_client;
  for (const auto* c : writing) {
    total += c->unsent;
    per_client[c->client] += c->unsent;
  }
  if (total <= options_.max_unread_bytes) {
    bool over = false;
    for (const auto& [client, bytes] : per_client)
      over |= bytes > options_.max_unread_bytes_per_client;
    if (!over) return;
  }
  // Oldest writes first.
  std::sort(writing.begin(), writing.end(),
            [](const Connection* a, const Connection* b) { return a->since < b->since; });
  bool closed = false;
  for (auto* c : writing) {
    auto& mine = per_client[c->client];
    if (total <= options_.max_unread_bytes && mine <= options_.max_unread_bytes_per_client) {
      continue;
    }
    spdlog::debug("closing a connection from {}: {} answer bytes not taken (max_unread_bytes)",
                  c->client, c->unsent);
    total -= c->unsent;
    mine -= c->unsent;
    ++counters_.unread;
    c->abort();
    closed = true;
  }
  trim_ |= closed;
}

void HttpServer::give_back_after_flood() {
  // After many connections closed, what they freed is spread over the heap in pieces that
  // glibc does not hand back by itself (only the heap's top is trimmed); malloc_trim returns
  // the whole free pages inside them. Once per drop of kTrimAfter connections, not per close.
  constexpr std::size_t kTrimAfter = 256;
  if (peak_open_ < open_.size() + kTrimAfter) return;
  peak_open_ = open_.size();
  ::malloc_trim(0);
}

}  // namespace toolbridge::transport
