#pragma once
// One downstream connection of HttpServer, as its accept loop, its handlers' exchanges and its
// sweep (http_server_sweep.cpp) see it. Internal to the transport's HTTP server.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "base/held_bytes.h"
#include "transport/http_server.h"

namespace toolbridge::transport {

using SweepClock = base::Clock;

struct HttpServer::Connection {
  using tcp = boost::asio::ip::tcp;
  enum class Phase { kWaiting, kHandling, kWriting };
  Connection(tcp::socket s, std::string c) : socket(std::move(s)), client(std::move(c)) {}
  ~Connection() { release(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  void close() {
    boost::system::error_code ec;
    socket.shutdown(tcp::socket::shutdown_both, ec);
    socket.close(ec);
  }
  // A reset: what the kernel still holds for a client that stopped reading is dropped too.
  void abort() {
    boost::system::error_code ec;
    socket.set_option(boost::asio::socket_base::linger(true, 0), ec);
    socket.close(ec);
  }

  // A write of `n` answer bytes begins: they are held for the client (base::held_answer_bytes)
  // until release() at its end.
  void hold(std::size_t n, SweepClock::time_point now) {
    unsent = n;
    progress_at = now;
    base::HeldBytes& held = base::held_answer_bytes();
    held.add(n);
    if (held.over() && server) server->hurry_sweep();
  }
  void release() {
    base::held_answer_bytes().remove(unsent);
    unsent = 0;
  }

  tcp::socket socket;
  std::string client;
  HttpServer* server = nullptr;  // to hurry its sweep when the answers held go over their bound
  Phase phase = Phase::kWaiting;
  SweepClock::time_point since;
  std::function<void()> on_peer_closed;
  std::string head;         // response status line and headers, reused from request to request
  std::string body;         // the body of the reply being written
  std::size_t unsent = 0;   // bytes of the write in progress (held for the client)
  std::uint64_t acked = 0;  // the peer's acknowledged bytes at the last sweep
  SweepClock::time_point progress_at;  // when the write began or `acked` last moved
  bool counted = true;                 // counted in live_ and per_client_ (false: being refused)
  Exchange::Verified verified;         // the credential this connection last authenticated with
  // TLS over `socket` (null: plain HTTP); its context is the one current when it was accepted.
  std::shared_ptr<boost::asio::ssl::context> tls_context;
  std::unique_ptr<boost::asio::ssl::stream<tcp::socket&>> tls;
};

}  // namespace toolbridge::transport
