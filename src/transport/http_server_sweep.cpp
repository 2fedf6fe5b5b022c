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

std::chrono::milliseconds HttpServer::sweep_interval() const {
  // A connection's `since` is the sweep's time before it (up to one interval early), so a timeout
  // is counted from one interval late: never cut short, and over by at most half of itself. A
  // sweep that runs late keeps that true (sweep()).
  const auto shortest = std::min(options_.idle_timeout, options_.write_timeout);
  return std::clamp<std::chrono::milliseconds>(shortest / 4, std::chrono::milliseconds(10),
                                               std::chrono::milliseconds(1000));
}

void HttpServer::schedule_sweep() {
  // While the answers held are over max_unread_bytes, the servers' answers wait unread
  // (base::HeldBytes): stalled writers are found within kStallWhenOver, not two sweeps.
  const bool over = base::held_answer_bytes().over();
  const auto interval = over ? std::min(sweep_interval(), kOverSweep) : sweep_interval();
  sweep_timer_.expires_after(interval);
  wait_for_sweep();
}

void HttpServer::wait_for_sweep() {
  sweep_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopping_) return;  // aborted: stopped, or hurry_sweep() waits anew
    sweep();
    schedule_sweep();
  });
}

void HttpServer::hurry_sweep() {
  if (stopping_ || sweep_timer_.expiry() <= clock_.now() + kOverSweep) return;
  sweep_timer_.expires_after(kOverSweep);  // ends the wait in progress
  wait_for_sweep();
}

void HttpServer::sweep() {
  const auto previous = now_;
  now_ = clock_.now();
  const auto slack = base::Clock::duration(sweep_interval());
  // This sweep ran late (a busy loop, a loaded machine): a connection stamped since the last one
  // began up to the whole gap after its `since`, which the slack no longer covers. It is moved to
  // one interval before now, so its timeout is still counted from no earlier than it began.
  const bool late = now_ - previous > slack;
  const auto stall_window = base::held_answer_bytes().over() ? kStallWhenOver : slack;
  // What the writes aborted at the last sweep held (freed since) goes back to the system now,
  // not at the end of the next flood.
  if (std::exchange(trim_, false)) ::malloc_trim(0);
  std::vector<std::function<void()>> closed_peers;
  std::vector<Connection*> writing;
  for (auto* c : open_) {
    if (!c->socket.is_open()) continue;
    if (late && c->since == previous) c->since = now_ - slack;
    const auto elapsed = now_ - c->since;
    if (c->phase == Connection::Phase::kWriting && c->unsent > 0 &&
        elapsed <= options_.write_timeout + slack && stalled(*c, stall_window)) {
      writing.push_back(c);
    }
    if (c->phase == Connection::Phase::kWaiting && elapsed > options_.idle_timeout + slack) {
      ++counters_.idle_closed;
      c->close();
    } else if (c->phase == Connection::Phase::kWriting &&
               elapsed > options_.write_timeout + slack) {
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

bool HttpServer::stalled(Connection& conn, SweepClock::duration window) const {
  const auto acked = bytes_acked(conn.socket.native_handle());
  if (acked && *acked != conn.acked) {
    conn.acked = *acked;
    conn.progress_at = now_;
  }
  // Without a count (not TCP), the write's age alone decides.
  return now_ - conn.progress_at >= window;
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
