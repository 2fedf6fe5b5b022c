// libFuzzer target: bytes from a client into the gateway's real listener. The whole front end
// (Beast's request parser, the router, /mcp, /sse, /messages, admin) runs over loopback TCP, as
// in production; no servers are configured, so nothing outside the process is touched. Each
// input is one connection: written whole, half-closed, then read until the gateway closes or a
// short deadline passes (a GET stream stays open).
#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "config/config.h"
#include "frontend/server.h"

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

constexpr auto kDeadline = std::chrono::milliseconds(100);

struct Gateway {
  asio::io_context io;
  std::unique_ptr<toolbridge::frontend::Server> server;
  tcp::endpoint endpoint;

  Gateway() {
    spdlog::set_level(spdlog::level::off);
    toolbridge::config::Config config;
    config.source = "<fuzz>";
    config.gateway.port = 0;
    server = std::make_unique<toolbridge::frontend::Server>(io, std::move(config));
    if (!server->start()) std::abort();
    endpoint = tcp::endpoint(asio::ip::make_address("127.0.0.1"), server->port());
  }
};

asio::awaitable<void> exchange(tcp::socket& client, tcp::endpoint endpoint, std::string request) {
  boost::system::error_code ec;
  co_await client.async_connect(endpoint, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return;
  co_await asio::async_write(client, asio::buffer(request),
                             asio::redirect_error(asio::use_awaitable, ec));
  client.shutdown(tcp::socket::shutdown_send, ec);
  char sink[16384];
  while (!ec) {
    co_await client.async_read_some(asio::buffer(sink),
                                    asio::redirect_error(asio::use_awaitable, ec));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Gateway gateway;
  tcp::socket client(gateway.io);
  asio::steady_timer deadline(gateway.io, kDeadline);
  bool done = false;
  std::string request(reinterpret_cast<const char*>(data), size);
  asio::co_spawn(gateway.io, exchange(client, gateway.endpoint, std::move(request)),
                 [&](std::exception_ptr) {
                   done = true;
                   deadline.cancel();
                 });
  deadline.async_wait([&](boost::system::error_code ec) {
    if (!ec) client.close();
  });
  while (!done) gateway.io.run_one();
  // Let the server side of this connection finish what it can before the next input.
  gateway.io.poll();
  return 0;
}
