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

#include "transport/http_server.h"

namespace toolbridge::transport {

using SweepClock = std::chrono::steady_clock;

struct HttpServer::Connection {
  using tcp = boost::asio::ip::tcp;
  enum class Phase { kWaiting, kHandling, kWriting };
  Connection(tcp::socket s, std::string c) : socket(std::move(s)), client(std::move(c)) {}
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

  tcp::socket socket;
  std::string client;
  Phase phase = Phase::kWaiting;
  SweepClock::time_point since;
  std::function<void()> on_peer_closed;
  std::string head;             // response status line and headers, reused from request to request
  std::string body;             // the body of the reply being written
  std::size_t unsent = 0;       // bytes of the write in progress (held for the client)
  std::uint64_t acked = 0;      // the peer's acknowledged bytes at the last sweep
  bool counted = true;          // counted in live_ and per_client_ (false: being refused)
  Exchange::Verified verified;  // the credential this connection last authenticated with
  // TLS over `socket` (null: plain HTTP); its context is the one current when it was accepted.
  std::shared_ptr<boost::asio::ssl::context> tls_context;
  std::unique_ptr<boost::asio::ssl::stream<tcp::socket&>> tls;
};

}  // namespace toolbridge::transport
